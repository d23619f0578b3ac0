"""Gated DeltaNet (linear attention) for all tokens of a call (spec/models.md §qwen35;
spec/numerics.md §gdn).

Per token, in order of its sequence: project n = zero-centred RMSNorm(x) to q|k|v, z, a, b;
causal depthwise conv over the last `kernel` q|k|v inputs, then SiLU; L2-normalise q and k per
key head (q also divided by sqrt(dk)); beta = sigmoid(b), g = −exp(A_log) · softplus(a + dt_bias);
the delta rule on each value head's state (key head h // (Nv / Nk) serves value head h); the
gated RMSNorm with silu(z) per value head; the output projection; the residual.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.layers.heads import join_heads, split_heads
from weightfile.ref.layers.norm import gated_rmsnorm
from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import emit
from weightfile.ref.numerics.deltanet import causal_conv, delta_rule_step, l2normalize
from weightfile.ref.numerics.f32 import F32

from .cache import Qwen35Cache
from .ops import Ops, Vec
from .trace import GDN_OPS, GDN_TOKEN_OPS
from .weights import GdnWeights


def gates(ops: Ops, w: GdnWeights, a: Vec, b: Vec) -> tuple[Vec, Vec]:
    """beta_h = sigmoid(b_h); g_h = −(exp(A_log_h) · softplus(a_h + dt_bias_h))
    (spec/models.md §qwen35)."""
    beta = [ops.sigmoid(v) for v in b]
    g = [
        -(ops.kernels.exp(al) * ops.softplus(v + dt))
        for v, al, dt in zip(a, w.a_log, w.dt_bias, strict=True)
    ]
    return beta, g


def query_key_heads(ops: Ops, conv: Vec) -> tuple[list[Vec], list[Vec]]:
    """L2-normalised key-head vectors of q (then divided by sqrt(dk), spec/numerics.md §gdn-l2norm)
    and of k."""
    c = ops.config
    kg, dk = c.gdn_key_dim, c.linear_key_head_dim
    scale = np.sqrt(F32(dk))  # correctly rounded
    q = [[x / scale for x in l2normalize(h)] for h in split_heads(conv[:kg], dk)]
    k = [l2normalize(h) for h in split_heads(conv[kg : 2 * kg], dk)]
    return q, k


def recurrence(
    ops: Ops, states: list[np.ndarray], q: list[Vec], k: list[Vec], v: list[Vec], beta: Vec, g: Vec
) -> list[Vec]:
    """One token through every value head's delta rule; updates `states` in place."""
    per_key = ops.config.linear_num_value_heads // ops.config.linear_num_key_heads
    out = []
    for h in range(len(v)):
        decay = ops.kernels.exp(g[h])
        states[h], o = delta_rule_step(
            states[h], q[h // per_key], k[h // per_key], v[h], decay, beta[h], ops.kernels.dot
        )
        out.append(o)
    return out


def gdn_block(
    ops: Ops, i: int, w: GdnWeights, input_norm, x: list[Vec], caches: list[Qwen35Cache], hook
) -> list[Vec]:
    """One Gated DeltaNet mixer plus its residual, for every token of the call, in order."""
    k, c = ops.kernels, ops.config
    kg, dv = c.gdn_key_dim, c.linear_value_head_dim
    n = each(lambda v: ops.norm(v, input_norm), x)
    qkv = each(
        lambda v: k.matvec(w.query, v) + k.matvec(w.key, v) + k.matvec(w.value, v),
        n,
    )
    z = each(lambda v: k.matvec(w.z, v), n)
    a = each(lambda v: k.matvec(w.a_projection, v), n)
    b = each(lambda v: k.matvec(w.b_projection, v), n)
    rows: dict[str, list[Vec]] = {op: [] for op in GDN_TOKEN_OPS}
    for t, cache in enumerate(caches):  # tokens of one sequence arrive in order
        window = [*cache.conv[i], qkv[t]]
        cache.conv[i] = window[1:]
        conv = [k.silu(v) for v in causal_conv(w.convolution, window)]
        q, kh = query_key_heads(ops, conv)
        beta, g = gates(ops, w, a[t], b[t])
        core = recurrence(ops, cache.recurrent[i], q, kh, split_heads(conv[2 * kg :], dv), beta, g)
        if (note := getattr(cache, "note_gdn", None)) is not None:  # a verification's journal
            note(i)
        zs = split_heads(z[t], dv)
        normed = [
            gated_rmsnorm(k, o, w.norm, zh, c.eps_f32) for o, zh in zip(core, zs, strict=True)
        ]
        token = dict(
            gdn_conv=conv, gdn_q=join_heads(q), gdn_k=join_heads(kh), gdn_beta=beta, gdn_g=g,
            gdn_core=join_heads(core), gdn_norm=join_heads(normed),
        )  # fmt: skip
        for op in GDN_TOKEN_OPS:
            rows[op].append(token[op])
    o = each(lambda v: k.matvec(w.output, v), rows["gdn_norm"])
    h = each(k.add, x, o)
    rows |= dict(attn_norm=n, gdn_qkv=qkv, gdn_z=z, gdn_a=a, gdn_b=b, gdn_out=o, attn_residual=h)
    emit(hook, i, GDN_OPS, rows)
    return h
