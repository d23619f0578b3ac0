"""The Qwen3-MoE decoder on file-encoded weights (spec/models.md §qwen3-moe-vqf-v3; spec/models.md
§qwen3-moe-forward).

`weightfile.fast.qwen3`'s attention, embedding, output and cache, with the FFN half replaced:
the post-attention norm and the F32 router product in one call (`norm_project`), the routing's
softmax in C (`router_softmax`, the spec/numerics.md §softmax every path shares) and its top-k and
renormalisation by the reference's own `choose` on each token's E probabilities (a few scalar
operations, so no second implementation to keep equal), then every chosen expert in one C call
per layer (`experts_of`, fast/csrc/moe.c): in ascending index, its gate/up over the tokens that
chose it, SwiGLU and its down, on that expert's bands read in place, and the combine
`out ← out ⊕ (w ⊗ y)` element by element, exactly the reference's order. Bytes read per token:
attention, the router and the k chosen experts' bands.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.layers.moe import router_softmax
from weightfile.fast.layers.norm import norm_project
from weightfile.fast.qwen3.decoder import FastQwen3Model
from weightfile.ref.layers.moe import choose
from weightfile.ref.layers.trace import emit
from weightfile.ref.qwen3_moe.config import Qwen3MoeConfig
from weightfile.ref.qwen3_moe.trace import MOE_OPS

from .bind import FastMoeLayer
from .experts import experts_of


class FastQwen3MoeModel(FastQwen3Model):
    """A Qwen3-MoE decoder whose weights stay in their file encoding."""

    config: Qwen3MoeConfig

    def mlp_block(self, i: int, lw: FastMoeLayer, h: np.ndarray, hook) -> np.ndarray:  # type:
        # ignore[override]
        """out = h + MoE(n), n = post_attention_layernorm(h), for every token of the call."""
        th, k = self.threads, self.config.num_experts_per_tok
        n, (logits,) = norm_project(h, lw.ffn_norm, self.eps, (lw.router,), th)
        routes = [choose(self.kernels, list(row), k) for row in router_softmax(logits)]
        moe = experts_of(lw.experts, n, routes, th)
        out = h + moe
        if hook is None:
            return out
        experts = np.array([[e for e, _ in r] for r in routes], dtype=np.float32)
        weights = np.array([[w for _, w in r] for r in routes], dtype=np.float32)
        rows = dict(
            ffn_norm=n, router_logits=logits, moe_experts=experts, moe_weights=weights,
            moe_out=moe, ffn_residual=out,
        )  # fmt: skip
        emit(hook, i, MOE_OPS, rows)
        return out
