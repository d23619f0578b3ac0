"""Vectorised `grouped_absmax` (spec/ninfer3.md §grouped-absmax); must equal
`ref.codecs.ninfer3.grouped_absmax`.

NumPy's binary32 divide and multiply are correctly rounded, `astype(float16)` rounds to nearest
even with subnormals, and `rint` rounds half to even, so each step is the ref step on a whole
`[N, groups, G]` array at once.
"""

from __future__ import annotations

import numpy as np

from weightfile.spec.codecs.ninfer3.formats import GroupedFormat
from weightfile.spec.codecs.ninfer3.layouts import align_up
from weightfile.spec.codecs.ninfer3.registry import (
    GROUPED_ABSMAX,
    NONFINITE,
    SCALE_OVERFLOW,
    rule,
)
from weightfile.spec.errors import InvalidError

RESCUE_SCALE = 0x0001
F16_INF = 0x7C00


def grouped(fmt: GroupedFormat, values: np.ndarray) -> np.ndarray:
    """`[N, K]` zero-padded to whole groups and reshaped to `[N, ceil(K/G), G]`."""
    n, k = values.shape
    k_groups = align_up(k, fmt.group_size)
    x = np.zeros((n, k_groups), dtype=np.float32)
    x[:, :k] = values
    return x.reshape(n, k_groups // fmt.group_size, fmt.group_size)


def first_failure(nonfinite: np.ndarray, overflow: np.ndarray) -> None:
    """Raise for the first failing group in row-major group order, as ref meets it."""
    failing = nonfinite | overflow
    if not failing.any():
        return
    n, g = np.unravel_index(int(np.argmax(failing)), failing.shape)
    where = f"groups[{n}][{g}]"
    if nonfinite[n, g]:
        raise InvalidError(rule(GROUPED_ABSMAX, NONFINITE), "non-finite value", path=where)
    raise InvalidError(rule(GROUPED_ABSMAX, SCALE_OVERFLOW), "scale overflows", path=where)


def encode_matrix(fmt: GroupedFormat, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes int8 `[N, K]` and scale words uint16 `[N, ceil(K/G)]` (ref.encode_matrix)."""
    n, k = values.shape
    x = grouped(fmt, values)  # [N, groups, G] binary32
    amax = np.abs(x).max(axis=2)  # max is exact and order-free; NaN and inf propagate
    nonfinite = ~np.isfinite(amax)
    with np.errstate(over="ignore", invalid="ignore"):
        raw32 = amax / np.float32(fmt.qmax)  # step 3
        scale16 = raw32.astype(np.float16).view(np.uint16)  # step 4
    zero = amax == 0
    scale16 = np.where((scale16 == 0) & ~zero, np.uint16(RESCUE_SCALE), scale16)  # step 5
    first_failure(nonfinite, ~nonfinite & (scale16 == F16_INF))  # steps 1 and 6
    scale16 = np.where(zero, np.uint16(0), scale16)  # step 2
    safe = np.where(zero, np.uint16(0x3C00), scale16)  # 1.0 in zero groups keeps inv32 finite
    inv32 = np.float32(1) / safe.view(np.float16).astype(np.float32)  # step 7
    n32 = x * inv32[:, :, None]  # step 8 (zero groups: 0 × 1.0 = ±0, which rounds to code 0)
    np.rint(n32, out=n32)
    np.minimum(n32, np.float32(fmt.qmax), out=n32)  # clamp after rounding: Q8 never gets −128
    np.maximum(n32, np.float32(fmt.qmin), out=n32)
    codes = n32.astype(np.int8)
    return codes.reshape(n, -1)[:, :k].copy(), scale16
