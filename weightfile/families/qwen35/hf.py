"""transformers Qwen3.5 text checkpoints to canonical parameters (spec/models.md §qwen35,
§tiny-checkpoints; spec/ninfer3.md §qwen35-text).

Three steps, each usable alone: `text_config_from_hf` normalises a transformers config into the
closed spec/ninfer3.md §qwen35-config object (the importer uses it); `canonical_from_hf` maps a
whole state dict (a transformers one, or a `checkpoint.Checkpoint`) onto the spec/ninfer3.md
§qwen35-names names through the per-parameter mapping of `hf_names`, which the importer streams
tensor by tensor; `weights_from_hf` does both and arranges the weights for the reference decoder
(`weightfile.ref.qwen35`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from weightfile.families.qwen35.hf_names import (
    TOP_TENSORS,
    VL_TEXT_MODEL_PREFIX,
    fused_experts_name,
    parameter_values,
    source,
    split_layer,
    text_model_prefix,
)
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.ref.qwen35.weights import Qwen35Weights, weights_from_parameters
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.ninfer3.text_config import (
    CONFIG_KEYS,
    DENSE_ARCHITECTURE,
    FULL_ATTENTION,
    LINEAR_ATTENTION,
    MODEL_TYPES,
    MOE_ARCHITECTURE,
    ROPE_PARAMETER_KEYS,
    Group,
    keys_of,
)
from weightfile.spec.ninfer3.text_names import text_parameters

#: transformers' defaults where a saved config may omit a key (Qwen3_5TextConfig, 5.x).
HF_DEFAULT_MROPE_SECTION = [11, 11, 10]
HF_DEFAULT_FULL_ATTENTION_INTERVAL = 4
#: model_type -> architecture, for configs built in code (their `architectures` is null).
ARCHITECTURE_OF = {model_type: arch for arch, model_type in MODEL_TYPES.items()}
SHAPE_RULE = "ninfer3.text.hf_shape"


def text_config_from_hf(hf_config: Mapping[str, Any]) -> dict[str, Any]:
    """The closed spec/ninfer3.md §qwen35-config config of a transformers Qwen3.5 text config (or a
    VL one's text_config).

    Keys outside the closed set are dropped; rope_parameters keeps its three members (rope_type
    must be default); layer_types is derived from full_attention_interval when absent.
    """
    raw = dict(hf_config.get("text_config") or hf_config)
    model_type = raw.get("model_type", "")
    if model_type not in ARCHITECTURE_OF:
        raise InvalidError(
            "ninfer3.text.hf_config", f"not a Qwen3.5 text model_type: {model_type!r:.60}",
            path="model_type",
        )  # fmt: skip
    if type(raw.get("num_hidden_layers")) is not int:
        raise InvalidError(
            "ninfer3.text.hf_config", "num_hidden_layers is not an integer",
            path="num_hidden_layers",
        )  # fmt: skip
    architecture = ARCHITECTURE_OF[model_type]
    out: dict[str, Any] = {"architectures": [architecture], "model_type": model_type}
    n = raw["num_hidden_layers"]
    if raw.get("layer_types") is None:
        every = raw.get("full_attention_interval", HF_DEFAULT_FULL_ATTENTION_INTERVAL)
        raw["layer_types"] = [
            FULL_ATTENTION if (i + 1) % every == 0 else LINEAR_ATTENTION for i in range(n)
        ]
    groups = [Group.REQUIRED, Group.MOE if architecture == MOE_ARCHITECTURE else Group.DENSE]
    types = raw["layer_types"] if type(raw["layer_types"]) is list else []  # checked later
    if FULL_ATTENTION in types:
        groups.append(Group.ATTENTION)
    if LINEAR_ATTENTION in types:
        groups.append(Group.GDN)
    for group in groups:
        for key in keys_of(group):
            if key in raw and key not in out:
                out[key] = raw[key]
    if "rope_parameters" in out:
        rope = dict(out["rope_parameters"])
        if rope.get("rope_type", "default") != "default":
            raise UnsupportedError(
                "ninfer3.text.hf_rope", f"rope_type {rope['rope_type']!r:.40} is not default",
                path="rope_parameters.rope_type",
            )  # fmt: skip
        rope.setdefault("mrope_section", HF_DEFAULT_MROPE_SECTION)
        out["rope_parameters"] = {k: rope[k] for k in ROPE_PARAMETER_KEYS if k in rope}
    assert set(out) <= set(CONFIG_KEYS)
    return out


def take(sd: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    """The tensor `name`, or NotFoundError naming it."""
    if name not in sd:
        raise NotFoundError("ninfer3.text.hf_tensor", f"the checkpoint has no {name}", path=name)
    return np.asarray(sd[name])


def canonical_from_hf(
    state_dict: Mapping[str, np.ndarray], config: Qwen35Config
) -> dict[str, np.ndarray]:
    """Every spec/ninfer3.md §qwen35-names text parameter as a float32 array, from a transformers
    state dict.

    Each parameter comes from its tensor as `hf_names.source` says: the VL prefix when the
    state dict has the VL embedding, fused v5 experts in a layer that has them, and with tied
    embeddings `text/output_head` is the embedding itself (no lm_head.weight is read).
    """
    multimodal = VL_TEXT_MODEL_PREFIX + TOP_TENSORS["token_embedding"] in state_dict
    prefix = text_model_prefix(multimodal)

    def tensor(name: str) -> np.ndarray:
        return take(state_dict, name)

    out: dict[str, np.ndarray] = {}
    for p in text_parameters(config.json):
        layer = split_layer(p.name)
        fused = layer is not None and fused_experts_name(prefix, layer[0]) in state_dict
        src = source(config.json, prefix, p.name, fused_experts=fused)
        out[p.name] = parameter_values(p, src, tensor, SHAPE_RULE)
    return out


def weights_from_hf(
    state_dict: Mapping[str, np.ndarray], hf_config: Mapping[str, Any]
) -> tuple[Qwen35Config, Qwen35Weights]:
    """(config, weights) of a transformers Qwen3.5 text model; arrays may be any float dtype."""
    config = validate_text_config(text_config_from_hf(hf_config))
    assert config.json["architectures"][0] in (DENSE_ARCHITECTURE, MOE_ARCHITECTURE)
    return config, weights_from_parameters(config, canonical_from_hf(state_dict, config))
