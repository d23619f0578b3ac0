"""The board's two attentions (spec/numerics.md §board-attention).

* decode: the INT8 KV cache, the query quantized per 32 elements, integer block dots, an online
  softmax with libm expf, and 1/S at the end (`flash_attn_single_q_q8_neon`);
* prefill: exact float32 K/V and query, a 4-lane FMA chain per dot, exp_neon4 on groups of 4
  positions and libm expf on the rest, weights p·(1/sum) (`st_attn_batched_packed_neon`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from weightfile.spec.numerics.constants import QBLOCK

from .expsilu import exp_neon4
from .fma import fma_f32
from .libm import expf
from .quant import quantize_kv, quantize_query

F32 = np.float32
START = F32(-1e9)  # the running max's start value in both attentions


@dataclass
class BoardKV:
    """One layer's cache: the f32 copy (prefill attention) and the INT8 copy (decode)."""

    keys: list[np.ndarray] = field(default_factory=list)  # [pos] float32 [kv_heads, head_dim]
    values: list[np.ndarray] = field(default_factory=list)
    k8: list[np.ndarray] = field(default_factory=list)  # [pos] int64 codes [kv_heads, head_dim]
    v8: list[np.ndarray] = field(default_factory=list)
    ks: list[np.ndarray] = field(default_factory=list)  # [pos] float32 scales [kv_heads]
    vs: list[np.ndarray] = field(default_factory=list)

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        """spec/numerics.md §board-kv-cache store one position: f32 copies and INT8 codes per kv
        head."""
        self.keys.append(k.astype(F32))
        self.values.append(v.astype(F32))
        kq = [quantize_kv(h) for h in k]
        vq = [quantize_kv(h) for h in v]
        self.k8.append(np.stack([c for c, _ in kq]))
        self.v8.append(np.stack([c for c, _ in vq]))
        self.ks.append(np.array([s for _, s in kq], F32))
        self.vs.append(np.array([s for _, s in vq], F32))


def attention_scale(head_dim: int) -> np.float32:
    """spec/numerics.md §board-attention scale = fl(1 / sqrtf(head_dim))."""
    return F32(1.0) / np.sqrt(F32(head_dim))


def decode_head(q: np.ndarray, kv: BoardKV, g: int, scale: np.float32) -> np.ndarray:
    """spec/numerics.md §board-decode-attention one query head over kv head g at every cached
    position."""
    qc, qs = quantize_query(q)  # [blocks, 32], [blocks]
    m, s_sum = START, F32(0.0)
    out = np.zeros(q.shape[0], dtype=F32)
    for t in range(len(kv.k8)):
        kc = kv.k8[t][g].reshape(-1, QBLOCK)
        s = F32(0.0)
        for b in range(kc.shape[0]):
            s = s + F32(int(np.dot(qc[b], kc[b]))) * qs[b]  # exact integer dot, unfused
        s = (s * kv.ks[t][g]) * scale
        if s > m:
            ms = expf(m - s)
            s_sum = s_sum * ms
            out = out * ms
            w, m = F32(1.0), s
        else:
            w = expf(s - m)
        s_sum = s_sum + w
        out = fma_f32(kv.v8[t][g].astype(F32), np.full_like(out, w * kv.vs[t][g]), out)
    if s_sum > 0:
        out = out * (F32(1.0) / s_sum)
    return out


def dot_lanes4(a: np.ndarray, b: np.ndarray) -> np.float32:
    """spec/numerics.md §board-prefill-attention lane j = fma chain over elements j, j+4, ...; then
    (l0+l2)+(l1+l3), then the scalar tail added in order."""
    lanes = np.zeros(4, dtype=F32)
    whole = len(a) - len(a) % 4
    for i in range(0, whole, 4):
        lanes = fma_f32(a[i : i + 4], b[i : i + 4], lanes)
    acc = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
    for i in range(whole, len(a)):
        acc = fma_f32(a[i], b[i], acc)  # not reached for head_dim a multiple of 4
    return F32(acc)


def hsum4(v: np.ndarray) -> np.float32:
    """(v0 + v2) + (v1 + v3)."""
    return F32((v[0] + v[2]) + (v[1] + v[3]))


def prefill_head(q: np.ndarray, keys: list, values: list, scale: np.float32) -> np.ndarray:
    """spec/numerics.md §board-prefill-attention one query head over float32 keys/values
    [pos][head_dim] 0..p."""
    scores = np.array([dot_lanes4(q, k) * scale for k in keys], dtype=F32)
    m = START
    for s in scores:
        m = max(m, s)
    x = scores - m
    n4 = len(x) - len(x) % 4
    p = np.concatenate([exp_neon4(x[:n4]), [expf(v) for v in x[n4:]]]).astype(F32)
    total = F32(0.0)
    for i in range(0, n4, 4):
        total = total + hsum4(p[i : i + 4])
    for i in range(n4, len(x)):
        total = total + p[i]
    inv = F32(1.0) / total
    out = np.zeros(q.shape[0], dtype=F32)
    for t, v in enumerate(values):
        out = fma_f32(np.full_like(out, p[t] * inv), v, out)
    return out
