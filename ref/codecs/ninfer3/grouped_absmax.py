"""The canonical `grouped_absmax` encoder, step by step as spec/ninfer3.md §grouped-absmax words it.

Input is binary32 values `[N, K]`; output is the logical codes `[N][K]` and the binary16 scale words
of the logical groups `[N][ceil(K/G)]`. Wholly-padding groups are the layout's business: their scale
is 0x0000 and their codes 0, exactly what spec/ninfer3.md §grouped-absmax's zero-filled `[N, K_pad]`
yields.
"""

from __future__ import annotations

import math

import numpy as np

from weightfile.ref.codecs.ninfer3.scalars import f16_rne_word, f16_value, f32, round_half_even
from weightfile.spec.codecs.ninfer3.formats import GroupedFormat
from weightfile.spec.codecs.ninfer3.registry import (
    GROUPED_ABSMAX,
    NONFINITE,
    SCALE_OVERFLOW,
    rule,
)
from weightfile.spec.errors import InvalidError

RESCUE_SCALE = 0x0001  # 2^-24, the smallest positive binary16 (spec/ninfer3.md §grouped-absmax step
# 5)


def group_amax(x: list[float], where: str) -> float:
    """Step 1: `amax = max |x[i]|`; a NaN or infinity in the group fails."""
    amax = 0.0
    for value in x:
        if not math.isfinite(value):
            raise InvalidError(rule(GROUPED_ABSMAX, NONFINITE), "non-finite value", path=where)
        amax = max(amax, abs(value))
    return amax


def group_scale(amax: float, qmax: int, where: str) -> int:
    """Steps 3–6: `scale16 = f16(f32(amax / qmax))`, rescued to 0x0001, failing on overflow."""
    raw32 = f32(amax / qmax)
    scale16 = f16_rne_word(raw32)
    if scale16 is None:
        raise InvalidError(rule(GROUPED_ABSMAX, SCALE_OVERFLOW), "scale overflows", path=where)
    if scale16 == 0x0000:
        scale16 = RESCUE_SCALE
    return scale16


def group_inverse(scale16: int) -> float:
    """Step 7: `inv32 = f32(1 / f32(scale16))`, the correctly rounded reciprocal."""
    return f32(1.0 / f16_value(scale16))


def lane_code(value: float, inv32: float, qmin: int, qmax: int) -> int:
    """Step 8: `n32 = f32(x × inv32)`, round half to even, then clamp to `[qmin, qmax]`."""
    n32 = f32(value * inv32)
    r = round_half_even(n32)
    return min(max(r, qmin), qmax)


def encode_group(fmt: GroupedFormat, x: list[float], where: str) -> tuple[int, list[int]]:
    """Steps 1–8 for one group of binary32 values: its scale word and its codes."""
    amax = group_amax(x, where)
    if amax == 0.0:  # step 2: scale +0 and every code 0
        return 0x0000, [0] * len(x)
    scale16 = group_scale(amax, fmt.qmax, where)
    inv32 = group_inverse(scale16)
    return scale16, [lane_code(v, inv32, fmt.qmin, fmt.qmax) for v in x]


def encode_matrix(fmt: GroupedFormat, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every logical group of binary32 `[N, K]` in row-major group order.

    Returns the codes int8 `[N, K]` and the scale words uint16 `[N, ceil(K/G)]`.
    """
    g_size = fmt.group_size
    rows: list[list[float]] = values.tolist()  # binary32 values, exact as binary64
    codes: list[list[int]] = []
    scales: list[list[int]] = []
    for n, row in enumerate(rows):
        row_codes: list[int] = []
        row_scales: list[int] = []
        for g, start in enumerate(range(0, len(row), g_size)):
            scale16, group_codes = encode_group(
                fmt, row[start : start + g_size], f"groups[{n}][{g}]"
            )
            row_scales.append(scale16)
            row_codes.extend(group_codes)
        codes.append(row_codes)
        scales.append(row_scales)
    n_rows, k = values.shape
    return (
        np.array(codes, dtype=np.int8).reshape(n_rows, k),
        np.array(scales, dtype=np.uint16).reshape(n_rows, -(-k // g_size)),
    )
