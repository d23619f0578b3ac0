"""The board tower's element-wise and F32 operations (spec/numerics.md §board-vision): patch
convolution, position resampling, the rotary table, LayerNorm, GELU and the mergers' F32
linears. Arrays are float32 with one rounding per operation unless a step says otherwise; the
loops run over the reduction axis in the engine's order, every other axis at once.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.qwen3.board.fma import fma_f32
from weightfile.ref.qwen3.board.libm import cosf, powf, sinf

from .tanhf import tanhf

F32 = np.float32
F64 = np.float64
ONE = F32(1.0)


def patch_rows(pixels: np.ndarray, patch: int, temporal: int) -> np.ndarray:
    """spec/numerics.md §board-vision-patch float32 [H', W', 3] -> [gh·gw, 3·T·P·P] in raster
    order, each row staged [c][t][py][px], the still frame repeated over t."""
    h, w, ch = pixels.shape
    gh, gw = h // patch, w // patch
    x = pixels.reshape(gh, patch, gw, patch, ch).transpose(0, 2, 4, 1, 3)
    x = np.broadcast_to(x[:, :, :, None], (gh, gw, ch, temporal, patch, patch))
    return np.ascontiguousarray(x.reshape(gh * gw, -1), dtype=F32)


def patch_embed(rows: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-patch per output channel a 4-lane FMA chain (lane j takes
    inputs j, j+4, …), then (l0 + l1) + (l2 + l3), then + bias. [P, vh]"""
    p, k = rows.shape
    lanes = np.zeros((p, weight.shape[0], 4), F32)
    for i in range(0, k - k % 4, 4):
        lanes = fma_f32(rows[:, None, i : i + 4], weight[None, :, i : i + 4], lanes)
    acc = (lanes[..., 0] + lanes[..., 1]) + (lanes[..., 2] + lanes[..., 3])
    for i in range(k - k % 4, k):  # the scalar tail (3·T·P·P is a multiple of 4 in practice)
        acc = fma_f32(rows[:, None, i], weight[None, :, i], acc)
    return acc + bias.astype(F32)


def _axis(i: int, n: int, side: int) -> tuple[int, int, np.float32]:
    """One axis of the position resampling: taps h0, h1 and the weight of h1."""
    s = F32(0.0) if n == 1 else F32(i * (side - 1)) / F32(n - 1)
    h0 = int(np.floor(s))
    return h0, min(h0 + 1, side - 1), F32(s - F32(h0))


def position_rows(table: np.ndarray, gh: int, gw: int) -> np.ndarray:
    """spec/numerics.md §board-vision-pos the bilinear position rows of a gh×gw grid, raster
    order: ((1−wh)(1−ww))·p00 + ((1−wh)·ww)·p01 + (wh·(1−ww))·p10 + (wh·ww)·p11, left to
    right. [P, vh]"""
    side = int(np.sqrt(F32(table.shape[0])))
    out = []
    for r in range(gh):
        h0, h1, wh = _axis(r, gh, side)
        for c in range(gw):
            w0, w1, ww = _axis(c, gw, side)
            terms = (
                ((ONE - wh) * (ONE - ww), h0 * side + w0),
                ((ONE - wh) * ww, h0 * side + w1),
                (wh * (ONE - ww), h1 * side + w0),
                (wh * ww, h1 * side + w1),
            )
            acc = terms[0][0] * table[terms[0][1]]
            for weight, idx in terms[1:]:
                acc = acc + weight * table[idx]
            out.append(acc)
    return np.array(out, dtype=F32)


def rotary_table(gh: int, gw: int, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-vision-rotary cos and sin [P, hd]: inv_freq_i = 1/powf(10000,
    2i/half) for i < half/2; angle d < half is row·inv_freq_d for d < half/2, else
    col·inv_freq_{d−half/2}; the same value at d and d + half."""
    half = head_dim // 2
    nf = half // 2
    inv = [ONE / powf(F32(10000.0), F32(2 * i) / F32(half)) for i in range(nf)]
    cos, sin = [], []
    for r in range(gh):
        for c in range(gw):
            ang = [F32(r) * inv[d] if d < nf else F32(c) * inv[d - nf] for d in range(half)]
            co, si = [cosf(a) for a in ang], [sinf(a) for a in ang]
            cos.append(co + co)
            sin.append(si + si)
    return np.array(cos, F32), np.array(sin, F32)


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-rotary rotate-half: (x0·c − x1·s, x1·c + x0·s), products
    rounded, then the add. x [..., P, hd]"""
    h = x.shape[-1] // 2
    a, b, c, s = x[..., :h], x[..., h:], cos[:, :h], sin[:, :h]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-vision-layernorm over the last axis: sum and sum of squares in
    binary64 (squares formed in binary64), mean = (float)(sum/n), var = (float)(ss/n) − mean²,
    inv = 1/sqrtf(var + eps), out = ((x − mean)·inv)·w + b."""
    x = np.asarray(x, F32)
    n = x.shape[-1]
    s = np.zeros(x.shape[:-1], F64)
    ss = np.zeros(x.shape[:-1], F64)
    for i in range(n):
        xi = x[..., i].astype(F64)
        s = s + xi
        ss = ss + xi * xi
    mean = (s / n).astype(F32)
    var = (ss / n).astype(F32) - mean * mean
    inv = ONE / np.sqrt(var + F32(eps))
    return ((x - mean[..., None]) * inv[..., None]) * w.astype(F32) + b.astype(F32)


def gelu(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-gelu 0.5·x·(1 + tanhf(0.7978845608·(x + 0.044715·((x·x)·x)))),
    left to right, tanhf that of spec/numerics.md §board-vision-tanhf."""
    x = np.asarray(x, F32)
    inner = F32(0.7978845608) * (x + F32(0.044715) * ((x * x) * x))
    t = np.array([tanhf(v) for v in inner.ravel()], F32).reshape(x.shape)
    return (F32(0.5) * x) * (ONE + t)


def dense_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-mergers an F32 linear with a binary64 accumulator over the
    inputs ascending (each product exact in binary64), then (float)sum + bias. x [T, k]"""
    acc = np.zeros((x.shape[0], w.shape[0]), F64)
    for i in range(x.shape[1]):
        acc = acc + x[:, None, i].astype(F64) * w[None, :, i].astype(F64)
    return acc.astype(F32) + b.astype(F32)
