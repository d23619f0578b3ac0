"""fast == ref, bit for bit and error for error, for q4/q5/q6/q8/t2 in `row_split_k128_v1`."""

from __future__ import annotations

import numpy as np
import pytest
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

LAYOUT = "row_split_k128_v1"
FORMATS = ["q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"]
ENCODABLE = FORMATS[:4]  # t2 is import-only (Q7)


@st.composite
def shaped_values(draw: st.DrawFn) -> tuple[tuple[int, int], np.ndarray]:
    shape = draw(shapes(LAYOUT))
    return shape, draw(float32_matrices(shape, allow_nonfinite=draw(st.booleans())))


@pytest.mark.parametrize("fmt", ENCODABLE)
@given(case=shaped_values())
@example(case=((1, 3), np.array([[1.0, -0.5, 0.25]], dtype=np.float32)))
@example(case=((1, 2), np.array([[8.83681869506836, -3.156738519668579]], dtype=np.float32)))
@example(case=((1, 1), np.array([[1e6]], dtype=np.float32)))
def test_encode_fast_eq_ref_on_any_float32(fmt: str, case: tuple) -> None:
    """Same payload bytes, or the same encoder failure, for any binary32 input."""
    shape, values = case
    ref = outcome(ref_codec(fmt, LAYOUT).encode, values, shape)
    fast = outcome(fast_codec(fmt, LAYOUT).encode, values, shape)
    assert_identical(ref, fast)


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_decode_validate_fast_eq_ref_on_any_payload(fmt: str, data: st.DataObject) -> None:
    """decode, decode_words and validate agree on arbitrary bytes of the right length."""
    shape = data.draw(shapes(LAYOUT))
    payload = data.draw(payloads(fmt, LAYOUT, shape))
    ref, fast = ref_codec(fmt, LAYOUT), fast_codec(fmt, LAYOUT)
    for name in ("validate", "decode_words", "decode"):
        assert_identical(
            outcome(getattr(ref, name), payload, shape),
            outcome(getattr(fast, name), payload, shape),
        )


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_valid_words_round_trip_and_slice_identically(fmt: str, data: st.DataObject) -> None:
    """encode_words -> decode_words gives the words back; row slices agree byte for byte."""
    shape = data.draw(shapes(LAYOUT))
    words = data.draw(valid_words(fmt, LAYOUT, shape))
    ref, fast = ref_codec(fmt, LAYOUT), fast_codec(fmt, LAYOUT)
    payload = ref.encode_words(words, shape)
    assert_identical(payload, fast.encode_words(words, shape))
    assert_identical(fast.decode_words(payload, shape), words)
    assert_identical(ref.encode_words(ref.decode_words(payload, shape), shape), payload)
    rows = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4))
    assert_identical(ref.row_slice(payload, shape, rows), fast.row_slice(payload, shape, rows))
