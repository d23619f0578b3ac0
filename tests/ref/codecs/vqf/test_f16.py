"""The ref f16 converters equal independent oracles: numpy's float16 for RNE and exact widening,
a truncation derived from numpy for the FTZ converter of spec/vqf.md §f16."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from strategies.codecs_vqf import any_f32_bits

from weightfile.ref.codecs.vqf.f16 import f16_rne, f16_to_f32_bits, f16_trunc_ftz


def _f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def _numpy_f16(bits: int) -> int:
    with np.errstate(all="ignore"):
        return int(np.array([_f32(bits)]).astype(np.float16).view(np.uint16)[0])


@given(any_f32_bits())
@example(0x33000000)  # 2^-25: ties to even -> 0
@example(0x33000001)  # just above 2^-25 -> smallest subnormal
@example(0x477FEFFF)  # just below 65520 -> 65504
@example(0x477FF000)  # 65520 -> Inf
@example(0x387FC000)  # ties inside the subnormal range
def test_f16_rne_equals_numpy(bits: int) -> None:
    got = f16_rne(bits)
    if np.isnan(_f32(bits)):
        assert got == (bits >> 16) & 0x8000 | 0x7E00  # spec/vqf.md §f16-rne: NaN -> sign | 0x7E00
        return
    assert got == _numpy_f16(bits)


def test_f16_widening_equals_numpy_for_every_word() -> None:
    words = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    want = words.view(np.float16).astype(np.float32).view(np.uint32)
    got = np.array([f16_to_f32_bits(int(h)) for h in words.tolist()], dtype=np.uint32)
    finite = (words & 0x7C00) != 0x7C00
    assert np.array_equal(got[finite], want[finite])
    # Inf and NaN: payload moved up by 13 bits, nothing quieted (exact widening).
    for h in (0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF):
        assert f16_to_f32_bits(h) == ((h & 0x8000) << 16) | 0x7F800000 | ((h & 0x3FF) << 13)


def _truncated_oracle(bits: int) -> int:
    """Toward-zero f16 from numpy's RNE: step back one ulp when RNE rounded away from zero."""
    x = _f32(bits)
    sign = (bits >> 16) & 0x8000
    ax = abs(x)
    if np.isnan(x) or ax >= 65536.0:
        return sign | 0x7C00
    if ax < 2.0**-14:
        return sign  # flush-to-zero below the smallest normal
    h = _numpy_f16(bits) & 0x7FFF
    if np.float32(np.array([h], dtype=np.uint16).view(np.float16)[0]) > ax:
        h -= 1
    return sign | h


@given(any_f32_bits())
@example(0x3F7FFFFF)  # just below 1.0 truncates to 0x3BFF
@example(0x477FFFFF)  # just below 65536 truncates to 65504
@example(0x38800000)  # 2^-14, the smallest f16 normal
@example(0x387FFFFF)  # just below it flushes to zero
def test_f16_trunc_ftz_equals_truncation_oracle(bits: int) -> None:
    assert f16_trunc_ftz(bits) == _truncated_oracle(bits)


@given(st.integers(0, 0xFFFF))
def test_rne_of_widened_f16_is_the_identity(h: int) -> None:
    if (h & 0x7C00) == 0x7C00 and h & 0x3FF:
        return  # NaN payloads collapse to 0x7E00 by design
    assert f16_rne(f16_to_f32_bits(h)) == h
