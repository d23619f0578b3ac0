"""Gated full attention for all tokens of a call, on arrays [T, width] (spec/models.md §qwen35,
§qwen35-attention; spec/numerics.md §attention, §rope).

The reference's `attention_block` step for step: the zero-centred input norm, the four
projections, q_norm / k_norm per head, the partial rotary embedding (interleaved MRoPE tables of
fast/numerics/rope.py), K/V into each token's cache row, the C attention kernel per token, the
sigmoid gate, the output projection and the residual add.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import kernels, threads_for
from weightfile.ref.layers.trace import emit
from weightfile.ref.qwen35.config import Qwen35Config
from weightfile.ref.qwen35.trace import ATTENTION_OPS

from .gdn import runs
from .matrix import matmat_set
from .ops import head_norm, rmsnorm, rope_half, sigmoid


def attend_tokens(
    config: Qwen35Config,
    i: int,
    q: np.ndarray,
    caches: Sequence,
    slots: Sequence[int],
    threads: int = 1,
) -> np.ndarray:
    """spec/numerics.md §attention Each token over rows 0 .. its slot of its own cache: each run of
    tokens sharing a cache in one C call (`wf_attend_tokens`, the fast Qwen3 path's attention
    units on the pool)."""
    c, lib = config, kernels()
    att = np.empty_like(q)
    kv, qd = c.num_key_value_heads * c.head_dim, q.shape[1]
    at = np.ascontiguousarray(slots, dtype=np.int64)
    for begin, end in runs(list(caches)):
        cache = caches[begin]
        work = 2 * qd * int(np.sum(at[begin:end] + 1))  # multiply-adds of q·k and p·v
        lib.wf_attend_tokens(
            address(q[begin]), qd, address(cache.keys[i]), address(cache.values[i]), kv,
            address(at[begin:end]), end - begin, c.num_attention_heads, c.num_key_value_heads,
            c.head_dim, address(att[begin]), threads_for(threads, work),
        )  # fmt: skip
    return att


def attention_block(model, i: int, w, x: np.ndarray, cos, sin, slots, caches, hook) -> np.ndarray:
    """h = x + output(attn(...) · sigmoid(gate(n))), n = zero-centred RMSNorm(x)."""
    c, eps, th = model.config, model.eps, model.threads
    hd = c.head_dim
    n = rmsnorm(x, model.input_norms[i], eps)
    q, gt, kk, vv = matmat_set((w.query, w.gate, w.key, w.value), n, th)  # one pool run
    qn = head_norm(q, w.query_norm, hd, eps)
    kn = head_norm(kk, w.key_norm, hd, eps)
    qr = rope_half(qn, cos, sin, hd)
    kr = rope_half(kn, cos, sin, hd)
    for t, cache in enumerate(caches):
        cache.keys[i][slots[t]] = kr[t]
        cache.values[i][slots[t]] = vv[t]
    att = attend_tokens(c, i, np.ascontiguousarray(qr), caches, slots, th)
    gated = att * sigmoid(gt)
    o = w.output.matmat(gated, th)
    h = x + o
    if hook is not None:
        rows = dict(
            attn_norm=n, q_proj=q, attn_gate=gt, k_proj=kk, v_proj=vv, q_norm=qn, k_norm=kn,
            q_rope=qr, k_rope=kr, attn=att, gated_attn=gated, o_proj=o, attn_residual=h,
        )  # fmt: skip
        emit(hook, i, ATTENTION_OPS, rows)
    return h
