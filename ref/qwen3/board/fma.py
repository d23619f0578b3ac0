"""A binary32 fused multiply-add with one rounding (spec/numerics.md §board-arithmetic).

Python has no `math.fma` before 3.13, and rounding a float64 `a*b + c` to float32 rounds twice.
The float64 product of two float32 values is exact (24 + 24 significant bits fit in 53), so the
only inexact step is the float64 sum. Its exact error comes from TwoSum; the sum is then moved
to the neighbour with an odd last bit whenever it was inexact (round-to-odd), and a round-to-odd
float64 rounds to float32 correctly: it carries 29 more bits than float32 and can never sit on
a float32 rounding boundary unless the exact value does.
"""

from __future__ import annotations

import numpy as np

F64 = np.float64


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with s = fl64(a + b) and a + b = s + e exactly (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _round_to_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The float64 next to s on e's side when s is inexact and even; s otherwise."""
    with np.errstate(invalid="ignore"):
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        toward = np.where(e > 0, np.inf, -np.inf)
        moved = np.nextafter(s, toward)
        return np.where((e != 0) & even & np.isfinite(s), moved, s)


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-arithmetic a*b + c rounded once to float32, element-wise (float32 in
    and out)."""
    a64 = np.asarray(a, dtype=np.float32).astype(F64)
    b64 = np.asarray(b, dtype=np.float32).astype(F64)
    c64 = np.asarray(c, dtype=np.float32).astype(F64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = a64 * b64  # exact
        s, e = _two_sum(p, c64)
        # TwoSum's error is NaN when s overflowed; the float64 sum is then inf and so is the fma.
        e = np.where(np.isfinite(s), e, 0.0)
        return _round_to_odd(s, e).astype(np.float32)
