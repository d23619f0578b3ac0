"""fast == ref, bit for bit and error for error, for nvfp4 in `block_scale_k16_m128x4_v1`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import assert_identical, outcome, payloads, shapes, valid_words

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_codec

FMT, LAYOUT = "nvfp4", "block_scale_k16_m128x4_v1"
REF, FAST = ref_codec(FMT, LAYOUT), fast_codec(FMT, LAYOUT)


@settings(max_examples=25)  # ref walks >= 8192 lanes per example
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


@settings(max_examples=25)
@given(data=st.data())
def test_imported_words_round_trip_identically(data: st.DataObject) -> None:
    """encode_words (the swizzle) gives the same bytes, and decode_words gives the words back."""
    shape = data.draw(shapes(LAYOUT))
    words = data.draw(valid_words(FMT, LAYOUT, shape))
    payload = REF.encode_words(words, shape)
    assert_identical(payload, FAST.encode_words(words, shape))
    assert_identical(FAST.decode_words(payload, shape), words)
    assert_identical(outcome(REF.decode, payload, shape), outcome(FAST.decode, payload, shape))
