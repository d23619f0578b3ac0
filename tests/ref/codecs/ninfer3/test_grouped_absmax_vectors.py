"""The spec/ninfer3.md §grouped-absmax worked vectors of `grouped_absmax`, reproduced exactly by ref
and fast.

Numbers are typed from spec/ninfer3.md §grouped-absmax. Both engines run them: the table is the
spec's, not ours.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import float32_matrices, shapes

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
from weightfile.spec.errors import InvalidError

LAYOUT = "row_split_k128_v1"


@pytest.fixture(params=["ref", "fast"])
def get_codec(request: pytest.FixtureRequest):
    return {"ref": ref_get_codec, "fast": fast_get_codec}[request.param]


def group(values: list[float], k: int = 64) -> np.ndarray:
    row = np.zeros((1, k), dtype=np.float32)
    row[0, : len(values)] = values
    return row


def encode_words(get_codec, fmt: str, row: np.ndarray) -> dict[str, np.ndarray]:
    codec = get_codec(fmt, LAYOUT)
    return codec.decode_words(codec.encode(row, row.shape), row.shape)


def test_q4_one_half_quarter(get_codec) -> None:
    """[1.0, −0.5, 0.25, 0…] -> scale 0x3092, codes [7, −4, 2, 0…] (−3.5009 rounds to −4)."""
    w = encode_words(get_codec, "q4_g64_fp16", group([1.0, -0.5, 0.25]))
    assert w["scales"].tolist() == [[0x3092]]
    assert w["codes"][0, :4].tolist() == [7, -4, 2, 0]
    assert not w["codes"][0, 4:].any()


def test_q4_reciprocal_multiply_gives_exact_tie(get_codec) -> None:
    """0x410D639C, 0xC04A0801 -> scale 0x3D0D; lane 1 is exactly −2.5 -> −2 (not −3); lane 0 7."""
    x = np.array([0x410D639C, 0xC04A0801], dtype=np.uint32).view(np.float32)
    w = encode_words(get_codec, "q4_g64_fp16", group(x.tolist()))
    assert w["scales"].tolist() == [[0x3D0D]]
    assert w["codes"][0, :2].tolist() == [7, -2]
    # inv32 = 0x3F4ABDAC; x1 × inv32 is exactly −2.5 in binary32 (the spec's point)
    inv32 = np.array(0x3F4ABDAC, dtype=np.uint32).view(np.float32)
    assert np.float32(x[1]) * inv32 == np.float32(-2.5)


def test_q4_tiny_group_is_rescued_to_0x0001(get_codec) -> None:
    """[1e-9, 0…] -> scale 0x0001 (2^-24) and all-zero codes, which is valid."""
    w = encode_words(get_codec, "q4_g64_fp16", group([1e-9]))
    assert w["scales"].tolist() == [[0x0001]]
    assert not w["codes"].any()


def test_q4_scale_overflow_fails(get_codec) -> None:
    """[1e6, …] -> f16 overflow -> fail."""
    with pytest.raises(InvalidError) as e:
        get_codec("q4_g64_fp16", LAYOUT).encode(group([1e6]), (1, 64))
    assert e.value.rule == "ninfer3.codec.grouped_absmax.scale_overflow"
    assert e.value.path == "groups[0][0]"


def test_q4_nonfinite_fails(get_codec) -> None:
    """A NaN or infinity in a group fails (spec/ninfer3.md §grouped-absmax step 1), naming the
    group."""
    row = group([1.0], k=130)
    row[0, 129] = np.inf
    with pytest.raises(InvalidError) as e:
        get_codec("q4_g64_fp16", LAYOUT).encode(row, row.shape)
    assert (e.value.rule, e.value.path) == (
        "ninfer3.codec.grouped_absmax.nonfinite",
        "groups[0][2]",
    )


def test_q8_ties_to_even(get_codec) -> None:
    """[127, −127, 63.5, −63.5, 0.5, −0.5, 0…] -> scale 0x3C00, [127, −127, 64, −64, 0, 0]."""
    w = encode_words(get_codec, "q8_g32_fp16", group([127, -127, 63.5, -63.5, 0.5, -0.5], k=32))
    assert w["scales"].tolist() == [[0x3C00]]
    assert w["codes"][0, :6].tolist() == [127, -127, 64, -64, 0, 0]


def test_q5_2x130_payload(get_codec) -> None:
    """Q5 [2,130]: row 0 scales [0x2C44, 0, 0, 0], codes [15, −8, 4, 0…]; 528 B; bytes fixed."""
    x = np.zeros((2, 130), dtype=np.float32)
    x[0, :3] = [1.0, -0.5, 0.25]
    codec = get_codec("q5_g64_fp16", LAYOUT)
    payload = codec.encode(x, (2, 130))
    assert len(payload) == 528
    assert (payload[0], payload[1], payload[256]) == (0x8F, 0x04, 0x02)
    assert payload[512:514] == bytes([0x44, 0x2C])
    assert payload[514:528] == bytes(14)  # row 0 groups 1..3 and all of row 1 are scale 0
    w = codec.decode_words(payload, (2, 130))
    assert w["codes"][0, :4].tolist() == [15, -8, 4, 0]
    assert w["scales"].tolist() == [[0x2C44, 0, 0], [0, 0, 0]]  # 3 logical groups; 4th is padding


@pytest.mark.parametrize("fmt", ["q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16"])
@given(data=st.data())
def test_scale_is_numpy_float16_of_f32_quotient_and_error_within_one_scale(
    fmt: str, data: st.DataObject
) -> None:
    """Oracle: scale = numpy f16(f32(amax/qmax)) (or the rescue); decode within one scale of x."""
    shape = data.draw(shapes(LAYOUT))
    x = data.draw(float32_matrices(shape))
    codec = ref_get_codec(fmt, LAYOUT)
    try:
        payload = codec.encode(x, shape)
    except InvalidError as e:
        assert e.rule == "ninfer3.codec.grouped_absmax.scale_overflow"
        return
    w = codec.decode_words(payload, shape)
    qmax = {"q4_g64_fp16": 7, "q5_g64_fp16": 15, "q6_g64_fp16": 31, "q8_g32_fp16": 127}[fmt]
    g = {"q8_g32_fp16": 32}.get(fmt, 64)
    decoded = codec.decode(payload, shape)
    # decode(encode(x)) obeys spec/ninfer3.md §grouped-formats: f32(f16 scale widened × q), here
    # through numpy's float16
    s32 = np.repeat(w["scales"].view(np.float16).astype(np.float32), g, axis=1)[:, : shape[1]]
    want = s32 * w["codes"].astype(np.float32)
    assert decoded.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    values = decoded.astype(np.float64)
    for n in range(shape[0]):
        for j, start in enumerate(range(0, shape[1], g)):
            lanes = x[n, start : start + g]
            amax = np.float32(np.abs(lanes).max())
            expect = np.float16(np.float32(amax) / np.float32(qmax)).view(np.uint16)
            expect = 0 if amax == 0 else (1 if expect == 0 else int(expect))
            assert int(w["scales"][n, j]) == expect
            s = float(np.uint16(expect).view(np.float16))
            err = np.abs(values[n, start : start + g] - lanes.astype(np.float64))
            # Rounding costs at most one scale; when f16 rounds the scale down (coarse subnormal
            # scales), codes clamp at ±qmax and the excess amax − qmax·s adds to it.
            assert (err <= s + max(0.0, float(amax) - qmax * s)).all()
