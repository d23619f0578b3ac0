"""log, log1p and softplus as explicit binary32 operation sequences (spec/numerics.md §log).

Gated DeltaNet needs softplus(x) = log(1 + exp(x)) (spec/models.md §qwen35), and libm's log is not
the same function on every platform, so the contract fixes one: an exact split x = m · 2^e with
m in [√½, √2), the odd atanh series in s = (m−1)/(m+1), and e·ln2 added as two parts. Like `exp`,
every function is element-wise over float32 scalars or arrays, so `tests/ref/numerics/
test_log_error.py` measures exactly the function the reference uses.
"""

from __future__ import annotations

import numpy as np

from .exp import LN2_HI, LN2_LO
from .exp import exp as canonical_exp
from .f32 import F32, ONE, f32_from_bits

#: √½ rounded to binary32; below it the mantissa is doubled so m lies in [√½, √2).
SQRT_HALF = f32_from_bits(0x3F3504F3)
#: 2/3, 2/5, 2/7, 2/9, 2/11, 2/13, each the nearest binary32 (the atanh series,
#: spec/numerics.md §log-f32).
LOG_POLY = tuple(
    f32_from_bits(b)
    for b in (0x3F2AAAAB, 0x3ECCCCCD, 0x3E924925, 0x3E638E39, 0x3E3A2E8C, 0x3E1D89D9)
)
TWO = F32(2.0)
SUBNORMAL_SCALE = F32(2.0**24)  # multiplying a subnormal by 2^24 is exact and makes it normal
SMALLEST_NORMAL = F32(2.0**-126)
#: torch's softplus threshold (beta 1): above it softplus(x) is x itself
#: (spec/numerics.md §softplus).
SOFTPLUS_THRESHOLD = F32(20.0)


def split_mantissa(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §log-f32 step 1: x = m · 2^e exactly, m in [√½, √2), for positive finite x
    (subnormals too)."""
    sub = x < SMALLEST_NORMAL
    m, e = np.frexp(np.where(sub, x * SUBNORMAL_SCALE, x))  # m in [0.5, 1), exact
    e = e - np.where(sub, 24, 0)
    low = m < SQRT_HALF
    m = np.where(low, m * TWO, m).astype(np.float32)  # doubling is exact
    return m, (e - low).astype(np.float32)


def log_mantissa(m: np.ndarray) -> np.ndarray:
    """spec/numerics.md §log-f32 step 2: log m = 2s + s·(z·P(z)), s = f/(2+f), f = m−1 (exact), z =
    s², P by Horner from 2/13 down to 2/3."""
    f = m - ONE  # Sterbenz: exact for m in [√½, √2)
    s = f / (TWO + f)
    z = s * s
    p = LOG_POLY[-1]
    for coef in LOG_POLY[-2::-1]:
        p = p * z + coef
    return (s + s) + s * (z * p)


def log(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §log-f32 The canonical binary32 natural log: e·ln2_hi + (log m + e·ln2_lo).

    log(+0) = −inf, log(+inf) = +inf, log(x < 0) and log(NaN) = NaN.
    """
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x) & (x > 0)
        m, e = split_mantissa(np.where(finite, x, ONE))
        y = e * LN2_HI + (log_mantissa(m) + e * LN2_LO)  # e·LN2_HI is exact for |e| <= 256
        y = np.where(x == 0, F32(-np.inf), y)
        y = np.where(x == np.inf, F32(np.inf), y)
        y = np.where((x < 0) | np.isnan(x), F32(np.nan), y)
    return y.astype(np.float32) if y.ndim else F32(y)


def log1p(y: np.ndarray) -> np.ndarray:
    """spec/numerics.md §log1p log(1 + y) for y >= 0: u = 1 + y; y itself when u == 1, else log(u) ·
    (y / (u − 1)).

    The correction factor y / (u − 1) undoes the rounding of 1 + y (Goldberg's method), so a
    tiny y keeps its relative accuracy where log(1 + y) alone would lose it.
    """
    y = np.asarray(y, dtype=np.float32)
    with np.errstate(all="ignore"):
        u = ONE + y
        r = np.where(u == ONE, y, log(u) * (y / (u - ONE)))
        r = np.where(np.isinf(u), log(u), r)
    return r.astype(np.float32) if r.ndim else F32(r)


def softplus(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §softplus softplus(x) = x when x > 20, else log1p(exp(x)) with the canonical
    exp (spec/numerics.md §exp)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        y = np.where(x > SOFTPLUS_THRESHOLD, x, log1p(canonical_exp(np.minimum(x, F32(20)))))
    return y.astype(np.float32) if y.ndim else F32(y)
