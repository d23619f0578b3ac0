"""Tiny Qwen3.5 text configs and random canonical weights for the reference tests.

`tiny_config_json` is a closed §6.1 config with both layer types; `random_parameters` draws
every §6.2 parameter (seeded) with norms and gates perturbed away from their neutral values,
so a missed 1 + w or a swapped gate shows up in the logits.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.spec.ninfer3.text_names import text_parameters

TINY: dict[str, Any] = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "hidden_size": 32,
    "vocab_size": 96,
    "num_hidden_layers": 3,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6,
    "layer_types": ["linear_attention", "full_attention", "linear_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_parameters": {
        "rope_theta": 10000000,
        "partial_rotary_factor": 0.5,
        "mrope_section": [2, 1, 1],
    },
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 8,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
    "intermediate_size": 48,
}

MOE_KEYS: dict[str, Any] = {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "model_type": "qwen3_5_moe_text",
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24,
}


def tiny_config_json(moe: bool = False) -> dict[str, Any]:
    """A deep copy of the tiny dense (or MoE) config."""
    doc = copy.deepcopy(TINY)
    if moe:
        del doc["intermediate_size"]
        doc |= MOE_KEYS
    return doc


def tiny_config(moe: bool = False) -> Qwen35Config:
    return validate_text_config(tiny_config_json(moe))


def random_parameters(config: Qwen35Config, seed: int) -> dict[str, np.ndarray]:
    """Every canonical parameter: N(0, 0.2) matrices, norms around 0 (zero-centred) or 1 (GDN
    norm), A_log in log([1, 8]), dt_bias around 1."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in text_parameters(config.json):
        v = rng.normal(0.0, 0.2, p.shape)
        if p.name.endswith("gdn/norm"):
            v = 1.0 + v
        elif p.name.endswith("gdn/a_log"):
            v = np.log(rng.uniform(1.0, 8.0, p.shape))
        elif p.name.endswith("gdn/dt_bias"):
            v = 1.0 + v
        elif p.name.endswith("token_embedding"):
            v = rng.normal(0.0, 1.0, p.shape)
        out[p.name] = v.astype(np.float32)
    return out


def bf16_round(a: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bf16 (ties to even), returned as float32."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)
