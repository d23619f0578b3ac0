"""The reference FP8 producer `fp8_row_maxabs`, step by step as spec/ninfer3.md §fp8-row-maxabs
words it.

Input is binary32 values `[N, K]`; output is E4M3FN code words `[N][K]` and one BF16 scale word
per row. The scale is a multiplier: `w = e4m3fn(code) × bf16(scale)`.
"""

from __future__ import annotations

import math

import numpy as np

from weightfile.ref.codecs.ninfer3.scalars import (
    bf16_rne_word,
    bf16_value,
    e4m3fn_nearest_word,
    f32,
    f32_bits,
)
from weightfile.spec.codecs.ninfer3.formats import E4M3FN_MAX
from weightfile.spec.codecs.ninfer3.registry import (
    FP8_ROW_MAXABS,
    INVERSE_OVERFLOW,
    NONFINITE,
    rule,
)
from weightfile.spec.errors import InvalidError

RESCUE_SCALE = 0x0001  # step 4: a non-zero row never gets scale word 0


def round_to_bf16(values: np.ndarray) -> list[list[float]]:
    """Step 1: every value rounded to BF16 (RNE) then widened exactly; non-finite fails."""
    n_rows, k = values.shape
    bits = values.view(np.uint32).tolist()  # [N][K] binary32 words
    rows = []
    for n in range(n_rows):
        row = []
        for i in range(k):
            word = bf16_rne_word(bits[n][i])
            if (word >> 7) & 0xFF == 0xFF:  # inf or NaN, also a finite value rounding to inf
                raise InvalidError(
                    rule(FP8_ROW_MAXABS, NONFINITE), "non-finite value", path=f"values[{n}][{i}]"
                )
            row.append(bf16_value(word))
        rows.append(row)
    return rows


def row_scale(amax: float) -> int:
    """Steps 3–4: `raw32 = f32(amax / 448)`, its BF16 RNE word, rescued to 0x0001."""
    raw32 = f32(amax / E4M3FN_MAX)
    word = bf16_rne_word(f32_bits(raw32))
    return RESCUE_SCALE if word == 0 else word


def row_inverse(scale_word: int, n: int) -> float:
    """Step 5: `inv32 = f32(1 / bf16(scale))`; a non-finite normalisation fails (Q8)."""
    inv32 = f32(1.0 / bf16_value(scale_word))
    if not math.isfinite(inv32):
        raise InvalidError(
            rule(FP8_ROW_MAXABS, INVERSE_OVERFLOW), "1/scale overflows binary32", path=f"rows[{n}]"
        )
    return inv32


def lane_code(x: float, inv32: float) -> int:
    """Steps 6–7: `n = f32(x × inv32)` clipped to ±448, nearest word (ties even), sign OR'd in."""
    n = min(max(f32(x * inv32), -E4M3FN_MAX), E4M3FN_MAX)
    word = e4m3fn_nearest_word(abs(n))
    return word | 0x80 if math.copysign(1.0, n) < 0 else word


def encode_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes uint8 `[N, K]` and BF16 scale words uint16 `[N]` of binary32 values `[N, K]`."""
    rows = round_to_bf16(values)
    codes: list[list[int]] = []
    scales: list[int] = []
    for n, row in enumerate(rows):
        amax = max(abs(x) for x in row)  # step 2
        if amax == 0.0:  # an all-zero row: scale 0x0000, codes 0x00 (-0 becomes +0)
            scales.append(0x0000)
            codes.append([0x00] * len(row))
            continue
        scale_word = row_scale(amax)
        inv32 = row_inverse(scale_word, n)
        scales.append(scale_word)
        codes.append([lane_code(x, inv32) for x in row])
    return np.array(codes, dtype=np.uint8).reshape(values.shape), np.array(scales, dtype=np.uint16)
