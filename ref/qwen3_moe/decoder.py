"""The Qwen3-MoE forward pass (spec/models.md §qwen3-moe; spec/models.md §qwen3-moe-forward).

Qwen3's decoder with the FFN half replaced: attention, norms, RoPE, the KV cache, the output and
the layer-major order are `weightfile.ref.qwen3.decoder.Qwen3Model`'s; every layer's FFN is the
MoE block of `weightfile.ref.layers.moe.routed_experts` (a version-3 VQF file is MoE in every
layer, spec/models.md §qwen3-moe-vqf-v3). Vectors are lists of float32 scalars.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.layers.moe import routed_experts
from weightfile.ref.layers.tokens import Vec, each
from weightfile.ref.layers.trace import emit
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .config import Qwen3MoeConfig
from .trace import MOE_OPS
from .weights import MoeLayerWeights, MoeModelWeights, check_shapes


class Qwen3MoeModel(Qwen3Model):
    """A Qwen3-MoE decoder bound to weights and a numerics profile."""

    config: Qwen3MoeConfig
    weights: MoeModelWeights  # type: ignore[assignment]

    def __init__(
        self, config: Qwen3MoeConfig, weights: MoeModelWeights, profile: NumericsProfile = CANONICAL
    ) -> None:
        check_shapes(config, weights)
        self.config = config
        self.weights = weights
        self.kernels = kernels_for(profile)
        self.rope = self.kernels.rope_tables(config.theta_f32, config.head_dim)

    def moe_token(self, lw: MoeLayerWeights, n: Vec) -> tuple[Vec, Vec, Vec, Vec]:
        """(router logits [E], chosen experts [k], their weights [k], MoE output [H]) of one
        token: spec/models.md §qwen35-ffn without the shared expert."""
        k = self.config.num_experts_per_tok
        logits, routes, out = routed_experts(self.kernels, lw.router, lw.experts, k, n)
        experts = [np.float32(e) for e, _ in routes]  # indices < 2^24: exact
        return logits, experts, [w for _, w in routes], out

    def mlp_block(self, i: int, lw: MoeLayerWeights, h: list[Vec], hook) -> list[Vec]:  # type:
        # ignore[override]
        """out = h + MoE(n), n = post_attention_layernorm(h), for every token of the call."""
        k, eps = self.kernels, self.config.eps_f32
        n = each(lambda v: k.rmsnorm(v, lw.ffn_norm, eps), h)
        parts = each(lambda v: self.moe_token(lw, v), n)
        logits, experts, weights, moe = ([p[j] for p in parts] for j in range(4))
        out = each(k.add, h, moe)
        rows = dict(
            ffn_norm=n, router_logits=logits, moe_experts=experts, moe_weights=weights,
            moe_out=moe, ffn_residual=out,
        )  # fmt: skip
        emit(hook, i, MOE_OPS, rows)
        return out
