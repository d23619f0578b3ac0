"""A transformers Qwen3 checkpoint as the reference decoder's config and weights
(spec/models.md §tiny-checkpoints, spec/vqf.md §arch-semantics).

`config_from_hf` reads config.json's keys into a `Qwen3Config` (the importer uses it);
`weights_from_state_dict` arranges a whole state dict (a transformers one, or a `Checkpoint`)
into `ModelWeights`, for checking the reference against transformers without a file in between.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from weightfile.families.qwen3.hf_names import (
    EMBED,
    FINAL_NORM,
    LAYER_TENSORS,
    LM_HEAD,
    layer_tensor,
)
from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.weights import LayerWeights, ModelWeights

#: The LayerWeights fields that are matrices, and those that are norm vectors.
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
NORMS = ("attn_norm", "ffn_norm", "q_norm", "k_norm")


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
        mats = {k: DenseMatrix(parts[k]) for k in PROJECTIONS}
        norms = {k: parts[k] for k in NORMS}
        layers.append(LayerWeights(**mats, **norms))
    lm = DenseMatrix(f(LM_HEAD)) if LM_HEAD in sd else None
    return ModelWeights(embed=f(EMBED), layers=tuple(layers), final_norm=f(FINAL_NORM), lm_head=lm)
