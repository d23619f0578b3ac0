"""The board's three RMSNorm summation orders (spec/numerics.md §board-rmsnorm).

All three finish the same way: rms = fl(1 / fl(sqrt(fl(fl(ss / n) + eps)))) and
out_i = fl(fl(x_i · rms) · w_i). They differ only in how ss = Σ x_i² is summed.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
ZERO = F32(0.0)
ONE = F32(1.0)
HEAD_EPS = F32(1e-6)  # q_norm / k_norm: the engine's fixed eps, not the file's


def sumsq_tree8(x: np.ndarray) -> np.float32:
    """spec/numerics.md §board-rmsnorm `tree8`: per chunk of 8 squares v, (v0+v4 + v1+v5) + (v2+v6 +
    v3+v7) as ((v0+v4)+(v1+v5)) + ((v2+v6)+(v3+v7)); chunks added in order, then a scalar tail."""
    v = x.astype(F32) * x.astype(F32)
    ss = ZERO
    whole = len(v) - len(v) % 8
    for c in range(0, whole, 8):
        s01 = (v[c] + v[c + 4]) + (v[c + 1] + v[c + 5])
        s23 = (v[c + 2] + v[c + 6]) + (v[c + 3] + v[c + 7])
        ss = ss + (s01 + s23)
    for i in range(whole, len(v)):
        ss = ss + v[i]
    return ss


def sumsq_sequential(x: np.ndarray) -> np.float32:
    """spec/numerics.md §board-rmsnorm `sequential`: ss = ss + fl(x_i²) for i ascending, from 0."""
    ss = ZERO
    for xi in x.astype(F32):
        ss = ss + xi * xi
    return ss


def finish(x: np.ndarray, w: np.ndarray, ss: np.float32, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm the common tail: a true square root and a division, no
    rsqrt."""
    rms = ONE / np.sqrt(ss / F32(len(x)) + eps)
    return (x.astype(F32) * rms) * w.astype(F32)


def rmsnorm_tree8(x: np.ndarray, w: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm `dyn_rms_norm`: decode norms and every final norm."""
    return finish(x, w, sumsq_tree8(x), eps)


def rmsnorm_sequential(x: np.ndarray, w: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm `dyn_rms_norm_batch`: the prefill layer norms."""
    return finish(x, w, sumsq_sequential(x), eps)


def head_norms(x: np.ndarray, w: np.ndarray, head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm q_norm / k_norm: every head normed with the sequential sum
    and eps 1e-6."""
    heads = x.astype(F32).reshape(-1, head_dim)
    return np.concatenate([rmsnorm_sequential(h, w, HEAD_EPS) for h in heads])
