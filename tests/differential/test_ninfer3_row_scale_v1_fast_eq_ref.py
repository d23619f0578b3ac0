"""fast == ref, bit for bit and error for error, for fp8_e4m3fn_row_bf16 in `row_scale_v1`."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import (
    assert_identical,
    float32_matrices,
    outcome,
    payloads,
    shapes,
    valid_words,
)

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_codec

FMT, LAYOUT = "fp8_e4m3fn_row_bf16", "row_scale_v1"
REF, FAST = ref_codec(FMT, LAYOUT), fast_codec(FMT, LAYOUT)


@st.composite
def shaped_values(draw: st.DrawFn) -> tuple[tuple[int, int], np.ndarray]:
    shape = draw(shapes(LAYOUT))
    return shape, draw(float32_matrices(shape, allow_nonfinite=draw(st.booleans())))


@given(case=shaped_values())
@example(case=((1, 4), np.array([[1.0, -2.0, 0.30078125, -1e-6]], dtype=np.float32)))
@example(case=((1, 2), np.array([[448.0, 1.0]], dtype=np.float32)))
@example(case=((1, 2), np.array([[1e-37, -0.0]], dtype=np.float32)))  # Q8: 1/scale overflows
@example(case=((2, 2), np.array([[-0.0, 0.0], [3e38, 1.0]], dtype=np.float32)))  # bf16 -> inf
def test_encode_fast_eq_ref_on_any_float32(case: tuple) -> None:
    """Same payload bytes, or the same encoder failure, for any binary32 input."""
    shape, values = case
    assert_identical(outcome(REF.encode, values, shape), outcome(FAST.encode, values, shape))


@given(data=st.data())
def test_decode_validate_fast_eq_ref_on_any_payload(data: st.DataObject) -> None:
    """decode, decode_words and validate agree on arbitrary bytes of the right length."""
    shape = data.draw(shapes(LAYOUT))
    payload = data.draw(payloads(FMT, LAYOUT, shape))
    for name in ("validate", "decode_words", "decode"):
        assert_identical(
            outcome(getattr(REF, name), payload, shape),
            outcome(getattr(FAST, name), payload, shape),
        )


@given(data=st.data())
def test_valid_words_round_trip_and_slice_identically(data: st.DataObject) -> None:
    """encode_words -> decode_words gives the words back; row slices agree byte for byte."""
    shape = data.draw(shapes(LAYOUT))
    words = data.draw(valid_words(FMT, LAYOUT, shape))
    payload = REF.encode_words(words, shape)
    assert_identical(payload, FAST.encode_words(words, shape))
    assert_identical(FAST.decode_words(payload, shape), words)
    assert_identical(REF.encode_words(REF.decode_words(payload, shape), shape), payload)
    rows = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4))
    assert_identical(REF.row_slice(payload, shape, rows), FAST.row_slice(payload, shape, rows))
