"""bf16 / fp32 / int32 in `contiguous_le_v1`: RNE against ml_dtypes, exact words both ways
(spec/ninfer3.md §direct-formats, §contiguous). Both engines run every test.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis.extra import numpy as hnp

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
from weightfile.spec.errors import InvalidError, MalformedError

LAYOUT = "contiguous_le_v1"


@pytest.fixture(params=["ref", "fast"])
def get_codec(request: pytest.FixtureRequest):
    return {"ref": ref_get_codec, "fast": fast_get_codec}[request.param]


@given(bits=hnp.arrays(np.uint32, (7,)))
def test_bf16_encode_is_ml_dtypes_rne(bits: np.ndarray) -> None:
    """Oracle: ml_dtypes bfloat16 cast, every binary32 word (NaN -> quiet NaN, sign kept)."""
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    for get_codec in (ref_get_codec, fast_get_codec):
        payload = get_codec("bf16", LAYOUT).encode(x, (7,))
        assert np.frombuffer(payload, "<u2").tolist() == want.tolist()


def test_bf16_ties_and_overflow(get_codec) -> None:
    """1+2^-8 ties down to 0x3F80, 1+3·2^-8 ties up to 0x3F82, FLT_MAX rounds to inf 0x7F80."""
    x = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x80000000], dtype=np.uint32).view(np.float32)
    payload = get_codec("bf16", LAYOUT).encode(x, (4,))
    assert np.frombuffer(payload, "<u2").tolist() == [0x3F80, 0x3F82, 0x7F80, 0x8000]


@given(words=hnp.arrays(np.uint16, (2, 3)))
def test_bf16_decode_is_word_shifted_16(words: np.ndarray) -> None:
    """spec/ninfer3.md §direct-formats: the value is exactly the binary32 word bf16 << 16, NaN
    payloads included."""
    for get_codec in (ref_get_codec, fast_get_codec):
        got = get_codec("bf16", LAYOUT).decode(words.astype("<u2").tobytes(), (2, 3))
        assert got.dtype == np.float32
        assert got.view(np.uint32).tolist() == (words.astype(np.uint32) << 16).tolist()
        oracle = words.view(ml_dtypes.bfloat16).astype(np.float32)
        finite = np.isfinite(oracle)
        assert got[finite].view(np.uint32).tolist() == oracle[finite].view(np.uint32).tolist()


def test_fp32_preserves_signalling_nan_and_negative_zero(get_codec) -> None:
    """spec/ninfer3.md §direct-formats: every word, NaN payload and signed zero round-trips
    unchanged."""
    bits = np.array([0x7F800001, 0xFFBFFFFF, 0x80000000, 0x00000001], dtype=np.uint32)
    codec = get_codec("fp32", LAYOUT)
    payload = codec.encode(bits.view(np.float32), (4,))
    assert payload == bits.astype("<u4").tobytes()
    assert codec.decode(payload, (4,)).view(np.uint32).tolist() == bits.tolist()


def test_int32_is_twos_complement_and_rank_0_holds_one_word(get_codec) -> None:
    """spec/ninfer3.md §direct-formats value = u or u − 2^32; spec/ninfer3.md §contiguous rank 0
    holds one word."""
    codec = get_codec("int32", LAYOUT)
    assert codec.decode(bytes.fromhex("FF FF FF FF"), ()).tolist() == -1
    assert codec.decode(bytes.fromhex("00 00 00 80"), ()).tolist() == -(2**31)
    assert codec.encode(np.array(7, dtype=np.int32), ()) == bytes.fromhex("07 00 00 00")


def test_conversion_is_never_implicit(get_codec) -> None:
    """spec/ninfer3.md §direct-formats: int32 refuses float values and bf16 refuses float64
    values."""
    with pytest.raises(InvalidError):
        get_codec("int32", LAYOUT).encode(np.zeros(2, np.float32), (2,))
    with pytest.raises(InvalidError):
        get_codec("bf16", LAYOUT).encode(np.zeros(2, np.float64), (2,))


def test_wrong_length_is_malformed(get_codec) -> None:
    """bytes must equal elements × word size."""
    with pytest.raises(MalformedError) as e:
        get_codec("bf16", LAYOUT).decode(bytes(5), (3,))
    assert (e.value.rule, e.value.offset) == ("ninfer3.codec.contiguous_le_v1.length", 5)
