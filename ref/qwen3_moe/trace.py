"""The Qwen3-MoE trace-name table (spec/models.md §qwen3-moe-forward): what each block records, in
order.

Names (T = tokens of the call; L = layer index; E experts, k chosen per token):
  the attention names of ref/qwen3/trace.py (ATTENTION_OPS)
  layers.L.{ffn_norm, moe_out, ffn_residual} [T, hidden]
  layers.L.router_logits [T, E]
  layers.L.moe_experts [T, k]  the chosen expert indices in ascending order, as float32 (exact)
  layers.L.moe_weights [T, k]  their renormalised weights, in the same order
"""

from __future__ import annotations

from weightfile.ref.layers.trace import model_names
from weightfile.ref.qwen3.trace import ATTENTION_OPS

from .config import Qwen3MoeConfig

#: The MoE block's operations, in recording order.
MOE_OPS = ("ffn_norm", "router_logits", "moe_experts", "moe_weights", "moe_out", "ffn_residual")
#: One layer's operations, in recording order.
LAYER_OPS = (*ATTENTION_OPS, *MOE_OPS)


def trace_names(num_layers: int) -> list[str]:
    """Every name a forward pass records, in the order it records them."""
    return model_names([LAYER_OPS] * num_layers)


def names_for(config: Qwen3MoeConfig) -> list[str]:
    """The trace names of a model with this config (the family registry's entry point)."""
    return trace_names(config.num_hidden_layers)
