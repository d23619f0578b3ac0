"""The FFN half of a layer: dense SwiGLU, or MoE with a shared expert (qwen-math §1.3, §1.4).

out = h + FFN(n), n = zero-centred RMSNorm(h). MoE (Qwen3.5-MoE): softmax over all experts'
router logits, the top-k probabilities (ties: lower expert index first) renormalised by their
canonical sum, the routed experts' outputs weighted and added in ascending expert index (as
transformers' index_add does), plus sigmoid(shared_score · n) times the shared expert.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.model.decoder import per_token
from weightfile.ref.numerics.f32 import ZERO
from weightfile.ref.numerics.kernels import Site

from .ops import Ops, Vec
from .weights import FfnWeights, MoeWeights


def swiglu_ffn(ops: Ops, w: FfnWeights, n: Vec, site: Site) -> tuple[Vec, Vec, Vec, Vec]:
    """(gate, up, silu(gate)·up, down) of one token through one SwiGLU FFN (§7)."""
    k = ops.kernels
    g, u = k.matvec(w.gate, n, site), k.matvec(w.up, n, site)
    sw = k.swiglu(g, u, site)
    return g, u, sw, k.matvec(w.down, sw, site)


def route(ops: Ops, logits: Vec) -> list[tuple[int, np.float32]]:
    """(expert, weight) of the top-k experts, ascending expert index (§18.3)."""
    probs = ops.kernels.softmax(logits)
    ranked = sorted(range(len(probs)), key=lambda e: (-probs[e], e))
    chosen = sorted(ranked[: ops.config.num_experts_per_tok])
    total = ops.kernels.sum([probs[e] for e in chosen])
    return [(e, probs[e] / total) for e in chosen]


def moe_token(ops: Ops, w: MoeWeights, n: Vec, site: Site) -> tuple[Vec, Vec, Vec, Vec, Vec]:
    """(router logits, routed sum, shared expert, [shared gate], output) for one token."""
    k = ops.kernels
    logits = k.matvec(w.router, n, site)
    routed: Vec = [ZERO] * len(n)
    for e, weight in route(ops, logits):
        y = swiglu_ffn(ops, w.experts[e], n, site)[3]
        routed = [acc + weight * v for acc, v in zip(routed, y, strict=True)]
    shared = swiglu_ffn(ops, w.shared, n, site)[3]
    score = ops.sigmoid(k.matvec(w.shared_score, n, site)[0])
    out = [r + score * s for r, s in zip(routed, shared, strict=True)]
    return logits, routed, shared, [score], out


def ffn_block(
    ops: Ops, i: int, w: FfnWeights | MoeWeights, post_norm, h: list[Vec], hook
) -> list[Vec]:
    """out = h + FFN(zero-centred RMSNorm(h)) for every token of the call."""
    k = ops.kernels
    each = per_token(i, len(h))
    n = each("ffn_norm", lambda v, s: ops.norm(v, post_norm, s), h)
    if isinstance(w, MoeWeights):
        parts = each("moe", lambda v, s: moe_token(ops, w, v, s), n)
        names = ("router_logits", "moe_routed", "shared_expert", "shared_gate", "moe_out")
    else:
        parts = each("mlp", lambda v, s: swiglu_ffn(ops, w, v, s), n)
        names = ("gate_proj", "up_proj", "swiglu", "down_proj")
    columns = {name: [p[j] for p in parts] for j, name in enumerate(names)}
    out = each("ffn_residual", k.add, h, columns[names[-1]])
    hook(f"layers.{i}.ffn_norm", n)
    for name, rows in columns.items():
        hook(f"layers.{i}.{name}", rows)
    hook(f"layers.{i}.ffn_residual", out)
    return out
