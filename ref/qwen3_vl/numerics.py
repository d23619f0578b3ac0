"""The vision tower's operations in binary32, one function per rule (spec/numerics.md §vision).

Built from the canonical sum (spec/numerics.md §lanes8-tree) and the correctly rounded evaluation
the RoPE tables use (spec/numerics.md §rope): each GELU is the real function of its binary32
argument, rounded once, so every implementation can reproduce it exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mpmath
import numpy as np

from weightfile.ref.numerics.f32 import F32, ONE, ZERO
from weightfile.ref.numerics.reduce import sum_f32
from weightfile.ref.numerics.rope import RopeTables, correctly_rounded

Vec = list[np.float32]


def layernorm(
    x: Sequence[np.float32], weight: Sequence[np.float32], bias: Sequence[np.float32], eps
) -> Vec:
    """spec/numerics.md §vision-layernorm mean = Σx ⊘ n; d_i = x_i ⊖ mean; var = Σ d_i⊗d_i ⊘ n;
    r = 1 ⊘ sqrt(var ⊕ eps); out_i = ((d_i ⊗ r) ⊗ w_i) ⊕ b_i; both sums canonical."""
    n = F32(len(x))
    mean = sum_f32(x) / n
    d = [v - mean for v in x]
    var = sum_f32(v * v for v in d) / n
    r = ONE / np.sqrt(var + F32(eps))
    return [((v * r) * w) + b for v, w, b in zip(d, weight, bias, strict=True)]


def _gelu_tanh_real(x: mpmath.mpf) -> mpmath.mpf:
    c = mpmath.sqrt(2 / mpmath.pi)
    return x / 2 * (1 + mpmath.tanh(c * (x + mpmath.mpf("0.044715") * x**3)))


def _gelu_erf_real(x: mpmath.mpf) -> mpmath.mpf:
    return x / 2 * mpmath.erfc(-x / mpmath.sqrt(2))


#: A binary64 candidate is accepted when it is farther than this (relative) from every binary32
#: rounding midpoint: far above the error of the binary64 evaluations below (a few ulps of
#: binary64, at most ~2^-42 relative where exp's argument is near its 709 limit).
GUARD = 2.0**-36


def _round_once(candidate: float, real, x: np.float32) -> np.float32:
    """The binary32 nearest to the real value whose binary64 estimate is `candidate`: its own
    rounding when no binary32 midpoint lies within GUARD of it, else the 192-bit evaluation."""
    f = F32(candidate)
    if candidate == 0 or not np.isfinite(f):
        return f if candidate == 0 else correctly_rounded(real, x)
    down = float(np.nextafter(f, F32(-np.inf)))
    up = float(np.nextafter(f, F32(np.inf)))
    near = min(abs(candidate - (float(f) + down) / 2), abs(candidate - (float(f) + up) / 2))
    if near > GUARD * abs(candidate):
        return f
    return correctly_rounded(real, x)


#: Below this |x| both GELUs are x/2 + x²/√(2π) + O(x⁴), the x² term under 2^-60 of x/2.
TINY = 2.0**-60


def _tiny(x: np.float32) -> np.float32:
    """spec/numerics.md §vision-gelu 0 < |x| < TINY: x/2 when binary32 holds it, else (x an odd
    subnormal, x/2 a binary32 midpoint) the binary32 just above x/2, since the real value
    exceeds x/2 by about 0.4x². No multi-precision evaluation can settle such an exact midpoint."""
    half = float(x) / 2  # exact in binary64
    f = F32(half)
    if float(f) == half:
        return f
    below = f if float(f) < half else np.nextafter(f, F32(-np.inf))
    return np.nextafter(below, F32(np.inf))


def gelu_tanh(x: np.float32) -> np.float32:
    """spec/numerics.md §vision-gelu gelu_tanh(x) = ½x(1 + tanh(√(2/π)(x + 0.044715x³))), the real
    function (real constants) of binary32 x, correctly rounded once. Evaluated as
    x / (1 + e^(−2u)) in binary64 (no cancellation for negative x), checked by `_round_once`."""
    if x != x:
        return x
    v = float(x)
    if 0 < abs(v) < TINY:
        return _tiny(x)
    u = math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)
    return _round_once(v / (1 + math.exp(min(-2 * u, 709.0))), _gelu_tanh_real, x)


def gelu_erf(x: np.float32) -> np.float32:
    """spec/numerics.md §vision-gelu gelu_erf(x) = ½x·erfc(−x/√2) = ½x(1 + erf(x/√2)), correctly
    rounded once (binary64 estimate checked by `_round_once`)."""
    if x != x:
        return x
    v = float(x)
    if 0 < abs(v) < TINY:
        return _tiny(x)
    return _round_once(0.5 * v * math.erfc(-v / math.sqrt(2)), _gelu_erf_real, x)


def add_bias(y: Sequence[np.float32], bias: Sequence[np.float32]) -> Vec:
    """spec/numerics.md §vision-linear A linear's bias: y_r ⊕ b_r, after the whole product."""
    return [v + b for v, b in zip(y, bias, strict=True)]


def bilinear_axis(index: int, size: int, side: int) -> tuple[tuple[int, int], tuple]:
    """spec/numerics.md §vision-pos-embed Taps and weights on one axis, corners aligned:
    src = (float(i) ⊗ float(side−1)) ⊘ float(max(size−1, 1)); f = floor(src); a = src ⊖ f;
    taps f and min(f+1, side−1); weights max(1 ⊖ a, 0) and max(1 ⊖ |a ⊖ 1|, 0)."""
    src = (F32(index) * F32(side - 1)) / F32(max(size - 1, 1))
    f = np.floor(src)
    a = src - f
    t0 = int(f)
    t1 = min(t0 + 1, side - 1)
    w0 = max(ONE - a, ZERO)
    w1 = max(ONE - abs(a - ONE), ZERO)
    return (min(t0, side - 1), t1), (w0, w1)


def bilinear_row(table: np.ndarray, row: int, col: int, gh: int, gw: int, side: int) -> Vec:
    """spec/numerics.md §vision-pos-embed The resampled position row of patch (row, col): the four
    taps (r0,c0), (r0,c1), (r1,c0), (r1,c1), each ⊗ (w_r ⊗ w_c), summed left to right."""
    (r0, r1), (wr0, wr1) = bilinear_axis(row, gh, side)
    (c0, c1), (wc0, wc1) = bilinear_axis(col, gw, side)
    taps = [(r0 * side + c0, wr0 * wc0), (r0 * side + c1, wr0 * wc1)]
    taps += [(r1 * side + c0, wr1 * wc0), (r1 * side + c1, wr1 * wc1)]
    out = [ZERO] * table.shape[1]
    for k, (idx, w) in enumerate(taps):
        vals = [F32(v) * w for v in table[idx]]
        out = vals if k == 0 else [o + v for o, v in zip(out, vals, strict=True)]
    return out


class Rotary2D:
    """spec/numerics.md §vision-rotary The axial rotary of the vision blocks: inv_freq over hdv/2
    (spec/numerics.md §inv-freq with d = hdv/2), the cos/sin of row·inv and column·inv correctly
    rounded once (spec/numerics.md §cos-sin), row angles first."""

    def __init__(self, theta: float, head_dim: int) -> None:
        self.tables = RopeTables(F32(theta), head_dim // 2)

    def cos_sin(self, row: int, col: int) -> tuple[Vec, Vec]:
        """(cos, sin), each hdv/2 long: [row part, column part]."""
        cr, sr = self.tables.row(row)
        cc, sc = self.tables.row(col)
        return list(cr) + list(cc), list(sr) + list(sc)
