"""Where each Qwen3-MoE weight is in a Hugging Face Qwen3MoeForCausalLM checkpoint
(spec/models.md §tiny-checkpoints, spec/vqf.md §text-tensors).

Attention, norms, the embedding and the output are Qwen3's names
(weightfile/families/qwen3/hf_names.py); the FFN of every layer is a router and per-expert
SwiGLU tensors, as `save_pretrained` writes them (one tensor per expert and role).
"""

from __future__ import annotations

from weightfile.families.qwen3.hf_names import layer_tensor

#: The Qwen3 LayerWeights fields a MoE layer keeps (the dense mlp.* ones are not there).
ATTENTION_FIELDS = (
    "attn_norm",
    "q_proj",
    "k_proj",
    "v_proj",
    "q_norm",
    "k_norm",
    "o_proj",
    "ffn_norm",
)
#: Expert roles, in the VQF stacked names' spelling (q4_gate, q4_up, q4_down).
EXPERT_ROLES = ("gate", "up", "down")
ARCHITECTURE = "Qwen3MoeForCausalLM"
MODEL_TYPE = "qwen3_moe"


def router_tensor(layer: int) -> str:
    """model.layers.L.mlp.gate.weight [E, H]."""
    return f"model.layers.{layer}.mlp.gate.weight"


def expert_tensor(layer: int, expert: int, role: str) -> str:
    """model.layers.L.mlp.experts.e.{gate,up,down}_proj.weight."""
    if role not in EXPERT_ROLES:
        raise ValueError(f"unknown expert role {role!r}")
    return f"model.layers.{layer}.mlp.experts.{expert}.{role}_proj.weight"


__all__ = [
    "ARCHITECTURE",
    "ATTENTION_FIELDS",
    "EXPERT_ROLES",
    "MODEL_TYPE",
    "expert_tensor",
    "layer_tensor",
    "router_tensor",
]
