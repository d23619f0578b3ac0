"""Gated full attention for all tokens of a call (spec/models.md §qwen35; spec/numerics.md
§attention, spec/models.md §qwen35-attention).

h = x + output(gate(attn(rope(norm(query)), rope(norm(key)), value), sigmoid(gate_proj))),
all of it on n = zero-centred RMSNorm(x). The K/V cache stores K after k_norm and RoPE.
"""

from __future__ import annotations

from collections.abc import Sequence

from weightfile.ref.layers import attention
from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import emit

from .cache import Qwen35Cache
from .ops import Ops, Vec
from .trace import ATTENTION_OPS
from .weights import AttentionWeights


def attend(ops: Ops, q: Vec, keys: list[list[Vec]], values: list[list[Vec]]) -> Vec:
    """Causal GQA attention of one token: query head h reads kv head h // group
    (spec/ninfer3.md §this-tree)."""
    c = ops.config
    return attention.attend(ops.kernels, q, keys, values, c.head_dim, c.group_size)


def attention_block(
    ops: Ops,
    i: int,
    w: AttentionWeights,
    input_norm,
    x: list[Vec],
    pos: Sequence[Sequence[int]],
    caches: list[Qwen35Cache],
    hook,
) -> list[Vec]:
    """One full-attention mixer plus its residual, for every token of the call."""
    k, hd = ops.kernels, ops.config.head_dim
    n = each(lambda v: ops.norm(v, input_norm), x)
    q = each(lambda v: k.matvec(w.query, v), n)
    gt = each(lambda v: k.matvec(w.gate, v), n)
    kk = each(lambda v: k.matvec(w.key, v), n)
    vv = each(lambda v: k.matvec(w.value, v), n)
    qn = each(lambda v: ops.head_norm(v, w.query_norm, hd), q)
    kn = each(lambda v: ops.head_norm(v, w.key_norm, hd), kk)
    qr = [ops.partial_rope(v, p) for v, p in zip(qn, pos, strict=True)]
    kr = [ops.partial_rope(v, p) for v, p in zip(kn, pos, strict=True)]
    att = attention.causal_attention(i, qr, kr, vv, caches, hd, lambda *a: attend(ops, *a))
    gated = [ops.gate(a, g) for a, g in zip(att, gt, strict=True)]
    o = each(lambda v: k.matvec(w.output, v), gated)
    h = each(k.add, x, o)
    rows = dict(
        attn_norm=n, q_proj=q, attn_gate=gt, k_proj=kk, v_proj=vv, q_norm=qn, k_norm=kn, q_rope=qr,
        k_rope=kr, attn=att, gated_attn=gated, o_proj=o, attn_residual=h,
    )  # fmt: skip
    emit(hook, i, ATTENTION_OPS, rows)
    return h
