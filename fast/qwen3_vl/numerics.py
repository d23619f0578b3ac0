"""The vision tower's operations on whole [rows, width] arrays, bit for bit those of
ref/qwen3_vl/numerics.py (spec/numerics.md §vision).

LayerNorm runs in fast/csrc/vision.c, the GELUs in fast/csrc/gelu.c; the position-embedding
resampling and the 2-D rotary are a few IEEE binary32 NumPy operations per element in the
reference's order (NumPy never fuses a multiply and an add), with the reference's taps, weights
and correctly rounded cos / sin tables.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import kernels
from weightfile.fast.numerics.rope import FastRopeTables
from weightfile.ref.numerics.f32 import F32
from weightfile.ref.numerics.rope import RopeTables
from weightfile.ref.qwen3_vl import numerics as ref

#: The guard band of the GELUs' binary64 estimate: the reference's (ref/qwen3_vl/numerics.py
#: GUARD, 2^-36 relative). The estimate's own error is a few binary64 ulps plus what the error of
#: exp's argument does (at most |2u|·2^-53 with |2u| <= 709, so about 2^-42.5 relative; erfc's
#: argument likewise below 2^-44 where the result is not zero), a factor of 64 inside the band:
#: outside it the estimate and the real value round to the same binary32 whatever libm rounds.
#: Inside it fast/csrc/gelu.c evaluates again in double-double arithmetic.
GUARD = ref.GUARD
TANH, ERF = 0, 1
_EXACT = {TANH: ref.gelu_tanh, ERF: ref.gelu_erf}


def layernorm(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, threads: int = 1
) -> np.ndarray:
    """spec/numerics.md §vision-layernorm on every row of x float32 [rows, n]."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    w = np.ascontiguousarray(weight, dtype=np.float32)
    b = np.ascontiguousarray(bias, dtype=np.float32)
    if x.ndim != 2 or w.shape != (x.shape[1],) or b.shape != w.shape:
        raise ValueError(f"layernorm of {x.shape} with weight {w.shape} and bias {b.shape}")
    out = np.empty_like(x)
    kernels().wf_layernorm_rows(
        address(x), x.shape[0], x.shape[1], address(w), address(b), F32(eps), address(out),
        threads,
    )  # fmt: skip
    return out


def gelu(x: np.ndarray, kind: int, threads: int = 1, guard: float = GUARD) -> np.ndarray:
    """spec/numerics.md §vision-gelu element-wise, correctly rounded, in C (fast/csrc/gelu.c: the
    guarded binary64 estimate, a double-double evaluation for the elements the band flags); the
    reference's multi-precision evaluation only for an element even the double-double value cannot
    settle (flag 2; none expected). `guard` is for tests (a huge one sends every element through
    the double-double path)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    flags = np.empty(x.shape, dtype=np.uint8)
    unsettled = kernels().wf_gelu(
        address(x), x.size, kind, guard, address(out), address(flags), threads
    )
    if unsettled:
        flat_x, flat_out = x.reshape(-1), out.reshape(-1)
        for i in np.flatnonzero(flags.reshape(-1) == 2):
            flat_out[i] = _EXACT[kind](flat_x[i])
    return out


def gelu_tanh(x: np.ndarray, threads: int = 1) -> np.ndarray:
    return gelu(x, TANH, threads)


def gelu_erf(x: np.ndarray, threads: int = 1) -> np.ndarray:
    return gelu(x, ERF, threads)


def bilinear_rows(
    table: np.ndarray, coords: list[tuple[int, int]], gh: int, gw: int, side: int
) -> np.ndarray:
    """spec/numerics.md §vision-pos-embed the resampled position rows [len(coords), D] of one image:
    taps and weights from the reference's per-axis rule, then ((t00 ⊕ t01) ⊕ t10) ⊕ t11."""
    rows = [ref.bilinear_axis(r, gh, side) for r in range(gh)]
    cols = [ref.bilinear_axis(c, gw, side) for c in range(gw)]
    idx = np.empty((len(coords), 4), dtype=np.int64)
    wts = np.empty((len(coords), 4), dtype=np.float32)
    for n, (r, c) in enumerate(coords):
        (r0, r1), (wr0, wr1) = rows[r]
        (c0, c1), (wc0, wc1) = cols[c]
        idx[n] = (r0 * side + c0, r0 * side + c1, r1 * side + c0, r1 * side + c1)
        wts[n] = (wr0 * wc0, wr0 * wc1, wr1 * wc0, wr1 * wc1)  # float32 products
    t = np.asarray(table, dtype=np.float32)
    out = t[idx[:, 0]] * wts[:, 0:1]
    for k in (1, 2, 3):
        out = out + t[idx[:, k]] * wts[:, k : k + 1]
    return out


class FastRotary2D:
    """spec/numerics.md §vision-rotary cos / sin [N, hdv/2] for patch coordinates (row part, column
    part), the reference's inv_freq and correctly rounded values (fast/numerics/rope.py)."""

    def __init__(self, theta: float, head_dim: int) -> None:
        self.tables = FastRopeTables(RopeTables(F32(theta), head_dim // 2))

    def cos_sin(self, coords: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        cos, sin = [], []
        for r, c in coords:
            (cr, sr), (cc, sc) = self.tables.row(r), self.tables.row(c)
            cos.append(np.concatenate([cr, cc]))
            sin.append(np.concatenate([sr, sc]))
        return np.stack(cos).astype(np.float32), np.stack(sin).astype(np.float32)


def rotate(
    x: np.ndarray, cos: np.ndarray, sin: np.ndarray, head_dim: int, threads: int = 1
) -> np.ndarray:
    """spec/numerics.md §rotation on every head of x [N, heads·hdv] (rows may be a column range of
    a wider array, read in place) with per-row cos / sin [N, hdv/2]: x'_j = x_j c − x_{j+h} s,
    x'_{j+h} = x_{j+h} c + x_j s, in fast/csrc/vision.c (wf_rotate_rows)."""
    n, width = x.shape
    if x.dtype != np.float32 or x.strides[1] != 4 or x.strides[0] % 4:
        x = np.ascontiguousarray(x, dtype=np.float32)
    c = np.ascontiguousarray(cos, dtype=np.float32)
    s = np.ascontiguousarray(sin, dtype=np.float32)
    if c.shape != (n, head_dim // 2) or s.shape != c.shape or width % head_dim:
        raise ValueError(f"rotate of {x.shape} with cos {c.shape}, sin {s.shape}, hdv {head_dim}")
    out = np.empty((n, width), np.float32)
    kernels().wf_rotate_rows(
        x.ctypes.data, n, x.strides[0] // 4, width // head_dim, head_dim, address(c), address(s),
        address(out), threads,
    )  # fmt: skip
    return out
