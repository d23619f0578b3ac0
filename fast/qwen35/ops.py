"""Element-wise and reducing operations of the fast Qwen3.5 pass on float32 arrays [T, width]
(spec/numerics.md §lanes8-tree, §rmsnorm, §exp, §silu, §softplus, §rotation; spec/models.md
§qwen35-forward).

NumPy element-wise float32 operations round every element once, exactly as the reference's
scalar binary32 operations do (no fused multiply-add), so they are used wherever the reference
does one such operation per element. Sums take `lanes8_sum`, the spec/numerics.md §lanes8-tree
order over the last axis; exp the C kernel `wf_exp_array` (spec/numerics.md §exp, the reference's
exp bit for bit, tests/fast/test_model_ops.py); RMSNorm and SwiGLU the C kernels the fast Qwen3
path uses.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.layers.norm import rmsnorm
from weightfile.fast.layers.swiglu import swiglu
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.f32 import ONE

__all__ = [
    "exp",
    "gated_norm",
    "head_norm",
    "lanes8_sum",
    "rmsnorm",
    "rope_half",
    "sigmoid",
    "softplus",
]


def lanes8_sum(terms: np.ndarray) -> np.ndarray:
    """spec/numerics.md §lanes8-tree over the last axis: term i into lane i mod 8 (ascending, from
    +0.0), then the fixed tree; one C call (`wf_lanes8_rows`, fast/csrc/ninfer.c) for every row."""
    t = np.ascontiguousarray(terms, dtype=np.float32)
    out = np.empty(t.shape[:-1], dtype=np.float32)
    rows = out.size
    if rows and t.shape[-1]:
        kernels().wf_lanes8_rows(address(t), rows, t.shape[-1], address(out))
    else:
        out[...] = 0.0
    return out


def exp(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §exp element-wise, by the C kernel."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    kernels().wf_exp_array(address(x), x.size, address(out))
    return out


def sigmoid(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §silu sigmoid(x) = 1 / (1 + exp(−x)) (the reference's `Ops.sigmoid`)."""
    with np.errstate(all="ignore"):
        return ONE / (ONE + exp(-np.asarray(x, dtype=np.float32)))


def softplus(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §softplus element-wise by the C kernel `wf_softplus_array`: the
    reference's `ref.numerics.log.softplus` (its log, log1p and exp) bit for bit, in one call
    instead of a few dozen NumPy passes over a few floats."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    kernels().wf_softplus_array(address(x), x.size, address(out))
    return out


def head_norm(x: np.ndarray, weight: np.ndarray, head_dim: int, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §rmsnorm over every head_dim slice of the rows of x, one weight."""
    return rmsnorm(x.reshape(-1, head_dim), weight, eps).reshape(x.shape)


def gated_norm(
    x: np.ndarray, weight: np.ndarray, gate: np.ndarray, head_dim: int, eps: np.float32
) -> np.ndarray:
    """spec/numerics.md §gated-rmsnorm per head: (RMSNorm(x) · w) · silu(gate); `wf_swiglu`
    computes silu(g) · u, the same two roundings (the product commutes)."""
    normed = head_norm(x, weight, head_dim, eps)
    return swiglu(gate, normed)


def rope_half(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, head_dim: int) -> np.ndarray:
    """spec/numerics.md §rotation rotate_half on the first 2·len(cos) dims of every head, the rest
    passed through: x [T, heads·head_dim], cos / sin [T, rot/2]."""
    t = x.shape[0]
    heads = x.reshape(t, -1, head_dim)
    h = cos.shape[-1]
    c, s = cos[:, None, :], sin[:, None, :]
    out = heads.copy()
    x1, x2 = heads[..., :h], heads[..., h : 2 * h]
    out[..., :h] = x1 * c - x2 * s
    out[..., h : 2 * h] = x2 * c + x1 * s
    return out.reshape(x.shape)
