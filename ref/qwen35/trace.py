"""Trace names of the Qwen3.5 text forward pass (spec/models.md §qwen35-trace).

Names (T = tokens of the call; L = layer index; Q = heads·D, Kw = kv_heads·D, Kg / Vg the
GDN key / value widths, I the FFN width):
  embed [T, hidden]
  full attention layers:
    layers.L.{attn_norm, o_proj, attn_residual} [T, hidden]
    layers.L.{q_proj, attn_gate, q_norm, q_rope, attn, gated_attn} [T, Q]
    layers.L.{k_proj, k_norm, k_rope, v_proj} [T, Kw]
  Gated DeltaNet layers:
    layers.L.{attn_norm, gdn_out, attn_residual} [T, hidden]
    layers.L.{gdn_qkv, gdn_conv} [T, 2Kg+Vg]  (before / after the causal conv and SiLU)
    layers.L.{gdn_q, gdn_k} [T, Kg]  (L2-normalised; q also scaled by 1/sqrt(dk))
    layers.L.{gdn_z, gdn_core, gdn_norm} [T, Vg]
    layers.L.{gdn_a, gdn_b, gdn_beta, gdn_g} [T, value heads]
  dense FFN: layers.L.{ffn_norm, down_proj, ffn_residual} [T, hidden],
             layers.L.{gate_proj, up_proj, swiglu} [T, I]
  MoE FFN:   layers.L.{ffn_norm, moe_routed, shared_expert, moe_out, ffn_residual} [T, hidden],
             layers.L.router_logits [T, experts], layers.L.shared_gate [T, 1]
  final_norm [T, hidden]
  logits [T, vocab]
"""

from __future__ import annotations

from weightfile.ref.layers.trace import model_names
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION

from .config import Qwen35Config

ATTENTION_OPS = (
    "attn_norm", "q_proj", "attn_gate", "k_proj", "v_proj", "q_norm", "k_norm", "q_rope",
    "k_rope", "attn", "gated_attn", "o_proj", "attn_residual",
)  # fmt: skip
#: Gated DeltaNet: the projections of the call, then the per-token recurrence, then the output.
GDN_TOKEN_OPS = ("gdn_conv", "gdn_q", "gdn_k", "gdn_beta", "gdn_g", "gdn_core", "gdn_norm")
GDN_OPS = (
    "attn_norm", "gdn_qkv", "gdn_z", "gdn_a", "gdn_b", *GDN_TOKEN_OPS, "gdn_out", "attn_residual",
)  # fmt: skip
DENSE_OPS = ("ffn_norm", "gate_proj", "up_proj", "swiglu", "down_proj", "ffn_residual")
MOE_OPS = (
    "ffn_norm", "router_logits", "moe_routed", "shared_expert", "shared_gate", "moe_out",
    "ffn_residual",
)  # fmt: skip


def trace_names(layer_types: list[str], moe: bool) -> list[str]:
    """Every name a forward pass records, in the order it records them."""
    ffn = MOE_OPS if moe else DENSE_OPS
    return model_names(
        [(*(ATTENTION_OPS if kind == FULL_ATTENTION else GDN_OPS), *ffn) for kind in layer_types]
    )


def names_for(config: Qwen35Config) -> list[str]:
    """The trace names of a model with this config (the family registry's entry point)."""
    return trace_names(list(config.layer_types), config.is_moe)
