"""The FFN half of a layer: dense SwiGLU, or MoE with a shared expert (spec/models.md §qwen3-moe,
§qwen35).

out = h + FFN(n), n = zero-centred RMSNorm(h). MoE (Qwen3.5-MoE): softmax over all experts'
router logits, the top-k probabilities (ties: lower expert index first) renormalised by their
canonical sum, the routed experts' outputs weighted and added in ascending expert index (as
transformers' index_add does), plus sigmoid(shared_score · n) times the shared expert.
"""

from __future__ import annotations

from weightfile.ref.layers.moe import routed_experts
from weightfile.ref.layers.swiglu import swiglu_ffn
from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import emit

from .ops import Ops, Vec
from .trace import DENSE_OPS, MOE_OPS
from .weights import FfnWeights, MoeWeights


def moe_token(ops: Ops, w: MoeWeights, n: Vec) -> tuple[Vec, Vec, Vec, Vec, Vec]:
    """(router logits, routed sum, shared expert, [shared gate], output) for one token."""
    k = ops.kernels
    topk = ops.config.num_experts_per_tok
    logits, _, routed = routed_experts(k, w.router, w.experts, topk, n)
    shared = swiglu_ffn(k, w.shared, n)[3]
    score = ops.sigmoid(k.matvec(w.shared_score, n)[0])
    out = [r + score * s for r, s in zip(routed, shared, strict=True)]
    return logits, routed, shared, [score], out


def ffn_block(
    ops: Ops, i: int, w: FfnWeights | MoeWeights, post_norm, h: list[Vec], hook
) -> list[Vec]:
    """out = h + FFN(zero-centred RMSNorm(h)) for every token of the call."""
    k = ops.kernels
    n = each(lambda v: ops.norm(v, post_norm), h)
    if isinstance(w, MoeWeights):
        parts = each(lambda v: moe_token(ops, w, v), n)
        table = MOE_OPS
    else:
        parts = each(lambda v: swiglu_ffn(k, w, v), n)
        table = DENSE_OPS
    # The table's middle entries (between ffn_norm and ffn_residual) name the parts, in order.
    middle = table[1:-1]
    columns = {name: [p[j] for p in parts] for j, name in enumerate(middle)}
    out = each(k.add, h, columns[middle[-1]])
    emit(hook, i, table, {"ffn_norm": n, **columns, "ffn_residual": out})
    return out
