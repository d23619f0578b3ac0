"""Vectorised `fp8_row_maxabs` (spec/ninfer3.md §fp8-row-maxabs); must equal
`ref.codecs.ninfer3.fp8_row_maxabs`.

The E4M3FN rounding of step 7 is done on the binary32 bits instead of ref's midpoint table:
a normal magnitude keeps 3 mantissa bits by the add-half-ulp-plus-lsb rule (carries walk into the
next exponent, which is the next word), and a magnitude below 2^-6 is `rint(m · 2^9)`, exact
because scaling by a power of two is exact; word 8 (2^-6) is where both rules meet.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.ninfer3.contiguous_le_v1 import bf16_rne
from weightfile.spec.codecs.ninfer3.formats import E4M3FN_BIAS, E4M3FN_MAX
from weightfile.spec.codecs.ninfer3.registry import (
    FP8_ROW_MAXABS,
    INVERSE_OVERFLOW,
    NONFINITE,
    rule,
)
from weightfile.spec.errors import InvalidError

RESCUE_SCALE = 0x0001
SMALLEST_NORMAL = np.float32(2.0**-6)


def round_to_bf16(values: np.ndarray) -> np.ndarray:
    """Step 1 (ref.round_to_bf16): BF16 RNE then widened; the first non-finite value fails."""
    words = bf16_rne(values)
    bad = ((words >> 7) & 0xFF) == 0xFF
    if bad.any():
        n, i = np.unravel_index(int(np.argmax(bad)), bad.shape)
        raise InvalidError(
            rule(FP8_ROW_MAXABS, NONFINITE), "non-finite value", path=f"values[{n}][{i}]"
        )
    return (words.astype(np.uint32) << np.uint32(16)).view(np.float32)


def e4m3fn_words(magnitude: np.ndarray) -> np.ndarray:
    """Nearest word 0x00..0x7E to float32 magnitudes in [0, 448], ties to the even word."""
    bits = magnitude.view(np.uint32)
    word = bits >> np.uint32(20)
    word &= np.uint32(1)
    word += bits
    word += np.uint32(0x7FFFF)
    word >>= np.uint32(20)  # binary32 exponent·8 + 3 mantissa bits, rounded half to even
    word -= np.uint32((127 - E4M3FN_BIAS) << 3)  # rebias; wraps for subnormals, replaced below
    small = magnitude < SMALLEST_NORMAL
    if small.any():
        sub = np.rint(magnitude[small] * np.float32(512.0))  # m·2^-9: scaling is exact
        word[small] = sub.astype(np.uint32)
    return word.astype(np.uint8)


def encode_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes uint8 `[N, K]` and BF16 scale words uint16 `[N]` (ref.encode_matrix)."""
    x = round_to_bf16(values)  # [N, K] binary32
    amax = np.abs(x).max(axis=1)
    zero = amax == 0
    raw32 = amax / np.float32(E4M3FN_MAX)  # step 3
    scale = bf16_rne(raw32)  # step 4
    scale = np.where((scale == 0) & ~zero, np.uint16(RESCUE_SCALE), scale)
    scale = np.where(zero, np.uint16(0), scale)
    widened = (scale.astype(np.uint32) << np.uint32(16)).view(np.float32)
    with np.errstate(divide="ignore", over="ignore"):
        inv32 = np.float32(1) / np.where(zero, np.float32(1), widened)  # step 5
    overflow = ~np.isfinite(inv32)
    if overflow.any():
        n = int(np.argmax(overflow))
        raise InvalidError(
            rule(FP8_ROW_MAXABS, INVERSE_OVERFLOW), "1/scale overflows binary32", path=f"rows[{n}]"
        )
    normalised = x * inv32[:, None]  # step 6
    np.minimum(normalised, np.float32(E4M3FN_MAX), out=normalised)
    np.maximum(normalised, np.float32(-E4M3FN_MAX), out=normalised)
    sign = ((normalised.view(np.uint32) >> np.uint32(24)) & np.uint32(0x80)).astype(np.uint8)
    np.abs(normalised, out=normalised)
    codes = e4m3fn_words(normalised)  # step 7
    codes |= sign
    codes[zero] = 0  # all-zero rows: codes 0x00, even for -0 inputs
    return codes, scale.astype(np.uint16)
