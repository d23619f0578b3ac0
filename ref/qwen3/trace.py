"""The Qwen3 trace-name table (spec/models.md §qwen3-forward): what each block records, in order.

Names (T = tokens of the call; L = layer index):
  embed [T, hidden]
  layers.L.{attn_norm, o_proj, attn_residual, ffn_norm, down_proj, ffn_residual} [T, hidden]
  layers.L.{q_proj, q_norm, q_rope, attn} [T, heads*head_dim]
  layers.L.{k_proj, k_norm, k_rope, v_proj} [T, kv_heads*head_dim]
  layers.L.{gate_proj, up_proj, swiglu} [T, intermediate]
  final_norm [T, hidden]
  logits [T, vocab]

The decoder blocks (reference and fast) record through `weightfile.ref.layers.trace.emit` with
these tuples, so the names are written here only.
"""

from __future__ import annotations

from weightfile.ref.layers.trace import model_names

from .config import Qwen3Config

#: The attention block's operations, in recording order.
ATTENTION_OPS = (
    "attn_norm", "q_proj", "k_proj", "v_proj", "q_norm", "k_norm", "q_rope", "k_rope", "attn",
    "o_proj", "attn_residual",
)  # fmt: skip
#: The MLP block's operations, in recording order.
MLP_OPS = ("ffn_norm", "gate_proj", "up_proj", "swiglu", "down_proj", "ffn_residual")
#: One layer's operations, in recording order.
LAYER_OPS = (*ATTENTION_OPS, *MLP_OPS)


def trace_names(num_layers: int) -> list[str]:
    """Every name a forward pass records, in the order it records them."""
    return model_names([LAYER_OPS] * num_layers)


def names_for(config: Qwen3Config) -> list[str]:
    """The trace names of a model with this config (the family registry's entry point)."""
    return trace_names(config.num_hidden_layers)
