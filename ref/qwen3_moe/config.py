"""Model hyper-parameters of a Qwen3-MoE decoder as a version-3 VQF file states them
(spec/models.md §qwen3-moe-vqf-v3).

A VQF file stores no `norm_topk_prob`, `decoder_sparse_step` or `mlp_only_layers`: a version-3
file means every layer is MoE and the k chosen weights are renormalised, so the config has no
field for them (the importer refuses checkpoints that say otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from weightfile.ref.qwen3.config import Qwen3Config


@dataclass(frozen=True)
class Qwen3MoeConfig(Qwen3Config):
    """Qwen3Config (intermediate_size = num_experts · moe_intermediate_size, the stacked width)
    plus the routed experts."""

    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_experts <= 0 or not 0 < self.num_experts_per_tok <= self.num_experts:
            raise ValueError("need num_experts > 0 and 0 < num_experts_per_tok <= num_experts")
        if self.intermediate_size != self.num_experts * self.moe_intermediate_size:
            raise ValueError("intermediate_size must be num_experts * moe_intermediate_size")
