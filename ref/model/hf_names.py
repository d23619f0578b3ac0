"""Hugging Face Qwen3ForCausalLM tensor names and config keys (qwen-math §2, vqf.md §7.1, §8).

One table says which transformers tensor feeds which decoder weight; the importer and the tests
read it, so the names are written down once.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.weights import LayerWeights, ModelWeights

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

#: The VQF per-layer stacked name (vqf.md §7.1) of each LayerWeights field; family prefix aside.
VQF_PROJECTIONS: dict[str, str] = {
    "q_proj": "q",
    "k_proj": "k",
    "v_proj": "v",
    "o_proj": "o",
    "gate_proj": "gate",
    "up_proj": "up",
    "down_proj": "down",
}
VQF_NORMS: dict[str, str] = {
    "attn_norm": "attn_norm",
    "ffn_norm": "ffn_norm",
    "q_norm": "q_norm",
    "k_norm": "k_norm",
}


def layer_tensor(layer: int, field: str) -> str:
    """The transformers name of one layer's weight, e.g. model.layers.0.self_attn.q_proj.weight."""
    return f"model.layers.{layer}.{LAYER_TENSORS[field]}"


def config_from_hf(cfg: Mapping[str, object]) -> Qwen3Config:
    """A transformers Qwen3 config.json (as a dict) -> Qwen3Config; KeyError names a missing key."""
    heads = int(cfg["num_attention_heads"])  # type: ignore[arg-type]
    hidden = int(cfg["hidden_size"])  # type: ignore[arg-type]
    head_dim = cfg.get("head_dim") or hidden // heads
    return Qwen3Config(
        vocab_size=int(cfg["vocab_size"]),  # type: ignore[arg-type]
        hidden_size=hidden,
        intermediate_size=int(cfg["intermediate_size"]),  # type: ignore[arg-type]
        num_hidden_layers=int(cfg["num_hidden_layers"]),  # type: ignore[arg-type]
        num_attention_heads=heads,
        num_key_value_heads=int(cfg.get("num_key_value_heads") or heads),  # type: ignore[arg-type]
        head_dim=int(head_dim),  # type: ignore[arg-type]
        rope_theta=float(rope_theta(cfg)),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),  # type: ignore[arg-type]
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
    )


def rope_theta(cfg: Mapping[str, object]) -> float:
    """rope_theta at the top level, or inside rope_parameters (transformers 5 writes it there)."""
    if cfg.get("rope_theta") is not None:
        return float(cfg["rope_theta"])  # type: ignore[arg-type]
    params = cfg.get("rope_parameters")
    if isinstance(params, Mapping) and params.get("rope_theta") is not None:
        return float(params["rope_theta"])
    return 10000.0


def weights_from_state_dict(sd: Mapping[str, np.ndarray], num_layers: int) -> ModelWeights:
    """transformers Qwen3ForCausalLM tensors to ModelWeights, all float32 and dense."""

    def f(name: str) -> np.ndarray:
        return np.ascontiguousarray(sd[name], dtype=np.float32)

    layers = []
    for i in range(num_layers):
        parts = {k: f(layer_tensor(i, k)) for k in LAYER_TENSORS}
        mats = {k: DenseMatrix(parts[k]) for k in VQF_PROJECTIONS}
        norms = {k: parts[k] for k in VQF_NORMS}
        layers.append(LayerWeights(**mats, **norms))
    lm = DenseMatrix(f(LM_HEAD)) if LM_HEAD in sd else None
    return ModelWeights(embed=f(EMBED), layers=tuple(layers), final_norm=f(FINAL_NORM), lm_head=lm)
