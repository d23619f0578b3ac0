"""The canonical profile's constants are the values numerics.md says they are (spec/numerics.md
§exp, §rope)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from weightfile.spec.numerics import constants as k
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

DOC = Path(__file__).resolve().parents[3] / "spec" / "numerics.md"


def f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def nearest_f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_exp_constants_are_the_nearest_binary32() -> None:
    assert nearest_f32_bits(1 / math.log(2)) == k.EXP_LOG2E_BITS
    assert f32(k.EXP_LN2_HI_BITS) == 0.693145751953125
    assert nearest_f32_bits(math.log(2) - 0.693145751953125) == k.EXP_LN2_LO_BITS
    facts = [math.factorial(n) for n in (7, 6, 5, 4, 3, 2)]
    assert list(k.EXP_POLY_BITS) == [nearest_f32_bits(1 / f) for f in facts]


def test_ln2_hi_times_k_is_exact() -> None:
    hi = f32(k.EXP_LN2_HI_BITS)
    for kk in range(-256, 257):
        assert f32(nearest_f32_bits(kk * hi)) == kk * hi


def test_exp_range_bounds() -> None:
    # X_MAX: exp below the overflow threshold 2**128 * (1 - 2**-25); its successor above it
    threshold = 128 * math.log(2) + math.log1p(-(2.0**-25))
    assert f32(k.EXP_X_MAX_BITS) < threshold < f32(k.EXP_X_MAX_BITS + 1)
    # X_MIN: exp above 2**-150 (rounds up to 2**-149); the next binary32 below it is under
    assert f32(k.EXP_X_MIN_BITS + 1) < -150 * math.log(2) < f32(k.EXP_X_MIN_BITS)


def test_doc_quotes_the_constants() -> None:
    text = DOC.read_text()
    for bits in (k.EXP_X_MAX_BITS, k.EXP_X_MIN_BITS, k.EXP_LOG2E_BITS, k.EXP_LN2_HI_BITS):
        assert f"0x{bits:08X}" in text


def test_canonical_profile() -> None:
    assert CANONICAL.name == "canonical" and CANONICAL.fma is False
    assert CANONICAL.quantized_matmul is QuantizedMatmul.Q8_ACTIVATION
    other = CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS)
    assert other.quantized_matmul is QuantizedMatmul.F32_WEIGHTS and other.name == "canonical"


def test_kestrel_board_profile_is_registered_and_refused_by_the_canonical_kernels() -> None:
    """The board profile (its CLI name; the registry is tests/test_profiles.py): kernels_for
    refuses it (it has FMA)."""
    from weightfile.ref.numerics.kernels import kernels_for
    from weightfile.spec.numerics.profile import KESTREL_BOARD

    assert KESTREL_BOARD.name == "kestrel-board" and KESTREL_BOARD.fma is True
    with pytest.raises(NotImplementedError):
        kernels_for(KESTREL_BOARD)
