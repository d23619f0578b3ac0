"""Where each Qwen3 decoder weight is in a Hugging Face Qwen3ForCausalLM checkpoint
(spec/models.md §tiny-checkpoints, spec/vqf.md §text-tensors).

One table says which transformers tensor feeds which `LayerWeights` field; the importer, the
state-dict helpers and the tests read it, so the names are written down once.
"""

from __future__ import annotations

EMBED = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"
LM_HEAD = "lm_head.weight"

#: LayerWeights field -> the tensor name after "model.layers.L.".
LAYER_TENSORS: dict[str, str] = {
    "attn_norm": "input_layernorm.weight",
    "q_proj": "self_attn.q_proj.weight",
    "k_proj": "self_attn.k_proj.weight",
    "v_proj": "self_attn.v_proj.weight",
    "q_norm": "self_attn.q_norm.weight",
    "k_norm": "self_attn.k_norm.weight",
    "o_proj": "self_attn.o_proj.weight",
    "ffn_norm": "post_attention_layernorm.weight",
    "gate_proj": "mlp.gate_proj.weight",
    "up_proj": "mlp.up_proj.weight",
    "down_proj": "mlp.down_proj.weight",
}


def layer_tensor(layer: int, field: str) -> str:
    """The transformers name of one layer's weight, e.g. model.layers.0.self_attn.q_proj.weight."""
    return f"model.layers.{layer}.{LAYER_TENSORS[field]}"
