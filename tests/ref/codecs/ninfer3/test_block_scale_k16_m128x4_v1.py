"""nvfp4 in `block_scale_k16_m128x4_v1`: the spec/ninfer3.md §block-scale example, ml_dtypes as the
E2M1/E4M3FN oracle, the import-only rule and the validator (spec/ninfer3.md §nvfp4, §block-scale).
Both engines run every test.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import shapes, valid_words

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
from weightfile.spec.errors import UnsupportedError

FMT, LAYOUT = "nvfp4", "block_scale_k16_m128x4_v1"
RULE = "ninfer3.codec.block_scale_k16_m128x4_v1."


@pytest.fixture(params=["ref", "fast"])
def codec(request: pytest.FixtureRequest):
    return {"ref": ref_get_codec, "fast": fast_get_codec}[request.param](FMT, LAYOUT)


def words_128x64(divisor: float = 1.0) -> dict[str, np.ndarray]:
    scales = np.zeros((128, 4), dtype=np.uint8)
    scales[31, 0] = 0x38  # 1.0
    scales[32, 0] = 0x40  # 2.0
    codes = np.zeros((128, 64), dtype=np.uint8)
    codes[31, :2] = [0x1, 0xF]  # 0.5, −6
    codes[32, 0] = 0x7  # 6
    return {
        "codes": codes,
        "scales": scales,
        "divisor": np.array(np.float32(divisor)).view(np.uint32),
    }


def test_example_4_4_swizzle_positions_and_layout(codec) -> None:
    """[128,64]: 4612 bytes; row 31 lane 0's scale at +496, row 32's at +4, divisor at 4608."""
    payload = codec.encode_words(words_128x64(4.0), (128, 64))
    assert len(payload) == 4612
    assert (payload[4096 + 496], payload[4096 + 4]) == (0x38, 0x40)
    assert sum(1 for b in payload[4096:4608] if b) == 2
    assert payload[4608:4612] == bytes.fromhex("00 00 80 40")  # 4.0f little-endian
    assert payload[31 * 32] == 0xF1  # row-major codes: lane 0 low nibble, lane 1 high nibble


def test_decode_is_e2m1_times_e4m3fn_over_divisor(codec) -> None:
    """W = e2m1(c) × e4m3fn(s) / d_w: 0.5·1/4, −6·1/4, 6·2/4; everything else ±0."""
    w = codec.decode(codec.encode_words(words_128x64(4.0), (128, 64)), (128, 64))
    assert w[31, :2].tolist() == [0.125, -1.5] and w[32, 0] == 3.0
    assert np.count_nonzero(w) == 3


@given(data=st.data())
def test_decode_matches_ml_dtypes_float4_and_float8(data: st.DataObject) -> None:
    """Oracle: ml_dtypes float4_e2m1fn and float8_e4m3fn values, one f32 multiply and divide."""
    shape = data.draw(shapes(LAYOUT))
    words = data.draw(valid_words(FMT, LAYOUT, shape))
    codec = fast_get_codec(FMT, LAYOUT)
    got = codec.decode(codec.encode_words(words, shape), shape)
    c = words["codes"].view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    s = words["scales"].view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    d = words["divisor"].view(np.float32)
    with np.errstate(over="ignore"):
        want = (c * np.repeat(s, 16, axis=1)) / d
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_there_is_no_quantiser(codec) -> None:
    """spec/ninfer3.md §nvfp4: no built-in FP->NVFP4 quantiser; encode refuses."""
    with pytest.raises(UnsupportedError) as e:
        codec.encode(np.zeros((128, 64), np.float32), (128, 64))
    assert e.value.rule == RULE + "no_encoder"


@pytest.mark.parametrize(
    ("mutate", "rule", "offset", "path"),
    [
        ({4096 + 496: 0x7F}, "scale_invalid", 4096 + 496, "scales[31][0]"),
        ({4096 + 4: 0x80}, "scale_invalid", 4100, "scales[32][0]"),  # negative zero scale
        ({4608: 0, 4609: 0, 4610: 0, 4611: 0}, "divisor_invalid", 4608, "divisor"),  # +0
        ({4611: 0xC0}, "divisor_invalid", 4608, "divisor"),  # −4.0
        ({4610: 0x80, 4611: 0x7F}, "divisor_invalid", 4608, "divisor"),  # +inf
    ],
)
def test_invalid_scale_and_divisor_are_named(
    codec, mutate: dict, rule: str, offset: int, path: str
) -> None:
    """One broken word -> one violation at its byte."""
    payload = bytearray(codec.encode_words(words_128x64(4.0), (128, 64)))
    for at, value in mutate.items():
        payload[at] = value
    found = codec.validate(bytes(payload), (128, 64))
    assert [(v.rule, v.offset, v.path) for v in found] == [(RULE + rule, offset, path)]


def test_largest_legal_scale_word_is_valid(codec) -> None:
    """Guard for the 0x7F attack: 0x7E (448) is legal. (nvfp4 never has a plane gap: N·K/2 is a
    multiple of 128·64/2 = 4096.)"""
    payload = bytearray(codec.encode_words(words_128x64(), (128, 64)))
    payload[4096 + 100] = 0x7E
    assert codec.validate(bytes(payload), (128, 64)) == []


def test_smallest_subnormal_divisor_is_valid(codec) -> None:
    """Guard: d_w = 2^-149 (word 0x00000001) is finite and > 0."""
    words = words_128x64()
    words["divisor"] = np.array(1, dtype=np.uint32)
    assert codec.validate(codec.encode_words(words, (128, 64)), (128, 64)) == []
