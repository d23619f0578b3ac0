"""fast == ref, bit for bit and error for error, for bf16 / fp32 / int32 in `contiguous_le_v1`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies.codecs_ninfer3 import assert_identical, outcome, payloads, shapes, valid_words

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_codec

LAYOUT = "contiguous_le_v1"
FORMATS = ["bf16", "fp32", "int32"]


@pytest.mark.parametrize("fmt", ["bf16", "fp32"])
@given(data=st.data())
def test_encode_fast_eq_ref_on_every_float32_word(fmt: str, data: st.DataObject) -> None:
    """Any binary32 word, NaN payloads and signed zeros included, encodes to the same bytes."""
    shape = data.draw(shapes(LAYOUT))
    bits = data.draw(hnp.arrays(np.uint32, shape))
    values = bits.view(np.float32)
    ref = outcome(ref_codec(fmt, LAYOUT).encode, values, shape)
    assert_identical(ref, outcome(fast_codec(fmt, LAYOUT).encode, values, shape))


@given(data=st.data())
def test_int32_encode_fast_eq_ref(data: st.DataObject) -> None:
    """int32 values encode to the same bytes."""
    shape = data.draw(shapes(LAYOUT))
    values = data.draw(hnp.arrays(np.int32, shape))
    ref = outcome(ref_codec("int32", LAYOUT).encode, values, shape)
    assert_identical(ref, outcome(fast_codec("int32", LAYOUT).encode, values, shape))


@pytest.mark.parametrize("fmt", FORMATS)
@given(data=st.data())
def test_decode_fast_eq_ref_on_any_payload(fmt: str, data: st.DataObject) -> None:
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
def test_words_round_trip_identically(fmt: str, data: st.DataObject) -> None:
    """encode_words gives the same bytes in both engines and decode_words gives the words back."""
    shape = data.draw(shapes(LAYOUT))
    words = data.draw(valid_words(fmt, LAYOUT, shape))
    payload = ref_codec(fmt, LAYOUT).encode_words(words, shape)
    assert_identical(payload, fast_codec(fmt, LAYOUT).encode_words(words, shape))
    assert_identical(fast_codec(fmt, LAYOUT).decode_words(payload, shape), words)
