"""Gated full attention for all tokens of a call, on arrays [T, width] (spec/models.md §qwen35,
§qwen35-attention; spec/numerics.md §attention, §rope).

The reference's `attention_block` step for step: the zero-centred input norm and the four
projections (one pool run); then one C call per sequence (`wf_q35_attention_mix`,
fast/csrc/qwen35_layer.c) for q_norm / k_norm per head, the partial rotary embedding (cos / sin
rows of the interleaved MRoPE tables of fast/numerics/rope.py), K/V into each token's cache row,
the attention (token tiles × kv heads on the pool) and the sigmoid gate; the output projection
and the residual add.
"""

from __future__ import annotations

import ctypes

import numpy as np

from weightfile.fast._native import WfQ35Attention, address
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.layers.trace import emit
from weightfile.ref.qwen35.trace import ATTENTION_OPS

from .gdn import run_parts, runs
from .matrix import ProductSet, cached_threads
from .ops import rmsnorm


class AttentionBinding:
    """One full-attention layer bound for `wf_q35_attention_mix` (fast/csrc/qwen35_layer.c): its
    four input projections as one ProductSet and its constants in a `wf_q35_attention` struct."""

    def __init__(self, model, w) -> None:
        c = model.config
        self.products = ProductSet((w.query, w.gate, w.key, w.value))
        self.keep = [np.ascontiguousarray(a, np.float32) for a in (w.query_norm, w.key_norm)]
        heads, kv, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        rot = 0 if model.rope is None else c.rotary_dim // 2
        self.struct = WfQ35Attention(*map(address, self.keep), heads, kv, hd, rot, model.eps)
        self.at = ctypes.addressof(self.struct)
        self.qd, self.kvd, self.rot = heads * hd, kv * hd, rot
        # the parts of wf_q35_attention_mix's output, per token: qn, kn, qr, kr, att, gated
        self.parts = (self.qd, self.kvd, self.qd, self.kvd, self.qd, self.qd)


def mix(b: AttentionBinding, i, proj, cos, sin, slots, caches, threads) -> list[np.ndarray]:
    """wf_q35_attention_mix on each run of tokens sharing a cache: [qn, kn, qr, kr, att, gated],
    each [T, width]."""
    t, per = proj.shape[0], sum(b.parts)
    out = np.empty((t, per), dtype=np.float32)  # each run's parts end to end, at its first row
    at = np.ascontiguousarray(slots, dtype=np.int64)
    cos, sin = np.ascontiguousarray(cos, np.float32), np.ascontiguousarray(sin, np.float32)
    if cos.shape != (t, b.rot) or sin.shape != (t, b.rot):
        raise ValueError(f"cos / sin {cos.shape} / {sin.shape} for {t} tokens of {b.rot} pairs")
    lib, spans = kernels(), runs(list(caches))
    for begin, end in spans:
        cache, n = caches[begin], end - begin
        work = 2 * b.qd * int(np.sum(at[begin:end] + 1))  # multiply-adds of q·k and p·v
        lib.wf_q35_attention_mix(
            b.at, address(proj[begin]), proj.shape[1], n, address(cos[begin]),
            address(sin[begin]), address(cache.keys[i]), address(cache.values[i]),
            address(at[begin:end]), address(out[begin]), cached_threads(threads, work),
            cached_threads(threads, n * 4 * (b.qd + b.kvd)),  # norms, rotations, gates
        )  # fmt: skip
    return run_parts(out, spans, b.parts)


def attention_block(model, i: int, w, x: np.ndarray, cos, sin, slots, caches, hook) -> np.ndarray:
    """h = x + output(attn(...) · sigmoid(gate(n))), n = zero-centred RMSNorm(x)."""
    b = model.bound((i, "attention"), lambda: AttentionBinding(model, w))
    n = rmsnorm(x, model.input_norms[i], model.eps)
    proj = b.products(n, model.threads)  # one pool run for the four
    qn, kn, qr, kr, att, gated = mix(b, i, proj, cos, sin, slots, caches, model.threads)
    o = w.output.matmat(gated, model.threads)
    h = x + o
    if hook is not None:
        q, gt, kk, vv = b.products.split(proj)
        rows = dict(
            attn_norm=n, q_proj=q, attn_gate=gt, k_proj=kk, v_proj=vv, q_norm=qn, k_norm=kn,
            q_rope=qr, k_rope=kr, attn=att, gated_attn=gated, o_proj=o, attn_residual=h,
        )  # fmt: skip
        emit(hook, i, ATTENTION_OPS, rows)
    return h
