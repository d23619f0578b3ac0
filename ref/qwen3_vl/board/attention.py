"""The tower's attention (spec/numerics.md §board-vision-attention): bidirectional, per head,
over the patches of one image.

The score of a query and a key sums hd/4 four-lane products with a halving tree whose widths
are n/2, n/4, …, 1 (integer halves of n = hd/4): when n is not a power of two some vectors never
reach the sum. That is the engine's defect, reproduced: head_dim 72 loses elements 32..35 and
68..71 of every dot, head_dim 24 elements 8..11 and 20..23.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.qwen3.board.fma import fma_f32
from weightfile.ref.qwen3.board.libm import expf

F32 = np.float32
F64 = np.float64


def tree_vectors(n: int) -> list[int]:
    """spec/numerics.md §board-vision-attention the product vectors (of 0..n−1) the halving tree
    folds into its result: every vector v reaches vector 0 unless a width w = n >> s skips it."""
    reach = {i: [i] for i in range(n)}
    w = n >> 1
    while w >= 1:
        for i in range(w):
            reach[i] = reach[i] + reach[i + w]
        w >>= 1
    return sorted(reach[0])


def scores(q: np.ndarray, k: np.ndarray, scale: np.float32) -> np.ndarray:
    """spec/numerics.md §board-vision-attention the scaled scores [Pq, Pk] of one head: vectors
    acc_i = q[4i:4i+4]·k[4i:4i+4] (lane-wise products), acc_i += acc_{i+w} for i < w with
    w = n/2, n/4, …, 1, then ((l0 + l1) + l2) + l3, times the scale."""
    n = q.shape[-1] // 4
    acc = [q[:, None, 4 * i : 4 * i + 4] * k[None, :, 4 * i : 4 * i + 4] for i in range(n)]
    w = n >> 1
    while w >= 1:
        for i in range(w):
            acc[i] = acc[i] + acc[i + w]
        w >>= 1
    a = acc[0]
    return (((a[..., 0] + a[..., 1]) + a[..., 2]) + a[..., 3]) * scale


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-attention per row: m = max, e = expf(x − m), the sum of e in
    binary64 ascending, inv = (float)(1/sum), e·inv."""
    e = np.array([[expf(v) for v in row] for row in s - s.max(axis=1, keepdims=True)], F32)
    total = np.zeros(s.shape[0], F64)
    for j in range(s.shape[1]):
        total = total + e[:, j].astype(F64)
    inv = (1.0 / total).astype(F32)
    return e * inv[:, None]


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: np.float32):
    """spec/numerics.md §board-vision-attention one head: (output [P, hd], scores [P, P]); the
    output per query is an FMA chain over the keys ascending, from 0."""
    s = scores(q, k, scale)
    p = softmax_rows(s)
    out = np.zeros(q.shape, F32)
    for j in range(k.shape[0]):
        out = fma_f32(np.repeat(p[:, j : j + 1], q.shape[1], axis=1), v[None, j], out)
    return out, s


def attention_scale(head_dim: int) -> np.float32:
    """spec/numerics.md §board-vision-attention 1.0f / sqrtf((float)hd)."""
    return F32(1.0) / np.sqrt(F32(head_dim))
