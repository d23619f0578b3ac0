"""exp, sigmoid and SiLU as explicit binary32 operation sequences (spec/numerics.md §exp, §silu).

The functions are element-wise: they accept a float32 scalar or a float32 array and apply the
same sequence of IEEE operations to every element (NumPy's element-wise +, -, *, / and rint are
exactly rounded whatever SIMD path it dispatches to). This lets `tools/exp_error.py` measure the
very function the reference uses, over every binary32 input.
"""

from __future__ import annotations

import numpy as np

from weightfile.spec.numerics.constants import (
    EXP_LN2_HI_BITS,
    EXP_LN2_LO_BITS,
    EXP_LOG2E_BITS,
    EXP_POLY_BITS,
    EXP_X_MAX_BITS,
    EXP_X_MIN_BITS,
)

from .f32 import F32, ONE, f32_from_bits, pow2

LOG2E = f32_from_bits(EXP_LOG2E_BITS)
LN2_HI = f32_from_bits(EXP_LN2_HI_BITS)
LN2_LO = f32_from_bits(EXP_LN2_LO_BITS)
X_MAX = f32_from_bits(EXP_X_MAX_BITS)
X_MIN = f32_from_bits(EXP_X_MIN_BITS)
POLY = tuple(f32_from_bits(b) for b in EXP_POLY_BITS)  # 1/7! ... 1/2!
INF = F32(np.inf)


def reduce_argument(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """spec/numerics.md §exp step 2: k = rint(x*log2e); r = hi - lo and c, the rounding error of
    that subtraction."""
    k = np.rint(x * LOG2E)
    hi = x - k * LN2_HI  # k*LN2_HI is exact, and so is this subtraction
    lo = k * LN2_LO
    r = hi - lo
    c = (hi - r) - lo  # r + c carries x - k*ln2 to well beyond binary32 precision
    return k, r, c


def exp_reduced(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """spec/numerics.md §exp step 3: exp(r + c) = 1 + (r + (c + r*r*q(r))), q by Horner from 1/7!
    down to 1/2!."""
    q = POLY[0]
    for coef in POLY[1:]:
        q = q * r + coef
    return ONE + (r + (c + (r * r) * q))


def scale_by_pow2(y: np.ndarray, k: np.ndarray) -> np.ndarray:
    """spec/numerics.md §exp step 4: y * 2**k as two products, the first exact, so at most one
    rounding."""
    a = np.where(k > 127, F32(127), np.where(k < -126, k + F32(64), k))
    b = np.where(k > 127, k - F32(127), np.where(k < -126, F32(-64), F32(0)))
    return (y * pow2(a)) * pow2(b)


def exp(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §exp The canonical binary32 exp: Cody-Waite reduction, degree-7 Taylor,
    exact scaling."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        clamped = np.minimum(np.maximum(x, X_MIN), X_MAX)  # keeps k in [-150, 128]; NaN stays
        k, r, c = reduce_argument(clamped)
        y = scale_by_pow2(exp_reduced(r, c), k)
        y = np.where(x > X_MAX, INF, y)  # spec/numerics.md §exp step 1: overflow
        y = np.where(x < X_MIN, F32(0), y)  # spec/numerics.md §exp step 1: underflow to +0
    return y if y.ndim else F32(y)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §silu sigmoid(x) = 1 / (1 + exp(-x)), three roundings after exp."""
    with np.errstate(all="ignore"):
        return ONE / (ONE + exp(-np.asarray(x, dtype=np.float32)))


def silu(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §silu SiLU(x) = x / (1 + exp(-x)): one division instead of x *
    sigmoid(x)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        y = x / (ONE + exp(-x))
    return y if y.ndim else F32(y)
