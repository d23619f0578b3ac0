"""transformers Qwen3.5 text checkpoints to canonical parameters (qwen-math §1.4, §2; ninfer-v3 §6).

Three steps, each usable alone (the importer uses the first two):
`text_config_from_hf` normalises a transformers config into the closed §6.1 object;
`canonical_from_hf` maps a state dict onto the §6.2 names (q_proj's per-head [query, gate]
interleave is split into two matrices, conv1d [C, 1, K] is transposed to [K, C], fused v5 MoE
experts are cut per expert); `weights_from_hf` does both and arranges the weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

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
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, layer_prefix, text_parameters

from .config import Qwen35Config, validate_text_config
from .weights import Qwen35Weights, weights_from_parameters

#: transformers' defaults where a saved config may omit a key (Qwen3_5TextConfig, 5.x).
HF_DEFAULT_MROPE_SECTION = [11, 11, 10]
HF_DEFAULT_FULL_ATTENTION_INTERVAL = 4
#: model_type -> architecture, for configs built in code (their `architectures` is null).
ARCHITECTURE_OF = {model_type: arch for arch, model_type in MODEL_TYPES.items()}


def text_config_from_hf(hf_config: Mapping[str, Any]) -> dict[str, Any]:
    """The closed §6.1 config of a transformers Qwen3.5 text config (or a VL one's text_config).

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


def take(
    sd: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...] | None = None
) -> np.ndarray:
    """The tensor `name`, or NotFoundError; with `shape`, InvalidError unless it has it."""
    if name not in sd:
        raise NotFoundError("ninfer3.text.hf_tensor", f"the checkpoint has no {name}", path=name)
    value = np.asarray(sd[name])
    if shape is not None and value.shape != shape:
        raise InvalidError(
            "ninfer3.text.hf_shape", f"{name} has shape {value.shape}, expected {shape}", path=name
        )
    return value


def _prefix(state_dict: Mapping[str, np.ndarray]) -> str:
    """`model.language_model.` in VL checkpoints, `model.` in text-only ones (qwen-math §2)."""
    vl = "model.language_model.embed_tokens.weight" in state_dict
    return "model.language_model." if vl else "model."


def _attention(sd: Mapping[str, np.ndarray], src: str, config: Qwen35Config) -> dict:
    """q_proj rows are per head [query (D) | gate (D)]: split them into two [Q, H] matrices."""
    d, heads = config.head_dim, config.num_attention_heads
    shape = (2 * heads * d, config.hidden_size)
    q_proj = take(sd, src + "self_attn.q_proj.weight", shape)
    per_head = q_proj.reshape(heads, 2, d, q_proj.shape[-1])
    return {
        "attention/query": per_head[:, 0].reshape(heads * d, -1),
        "attention/gate": per_head[:, 1].reshape(heads * d, -1),
        "attention/key": take(sd, src + "self_attn.k_proj.weight"),
        "attention/value": take(sd, src + "self_attn.v_proj.weight"),
        "attention/query_norm": take(sd, src + "self_attn.q_norm.weight"),
        "attention/key_norm": take(sd, src + "self_attn.k_norm.weight"),
        "attention/output": take(sd, src + "self_attn.o_proj.weight"),
    }


def _gdn(sd: Mapping[str, np.ndarray], src: str, config: Qwen35Config) -> dict:
    """in_proj_qkv rows are [q (Kg) | k (Kg) | v (Vg)]; conv1d.weight [C, 1, K] becomes [K, C]."""
    s, kg = src + "linear_attn.", config.gdn_key_dim
    conv_shape = (2 * kg + config.gdn_value_dim, 1, config.linear_conv_kernel_dim)
    qkv = take(sd, s + "in_proj_qkv.weight", (conv_shape[0], config.hidden_size))
    return {
        "gdn/query": qkv[:kg],
        "gdn/key": qkv[kg : 2 * kg],
        "gdn/value": qkv[2 * kg :],
        "gdn/z": take(sd, s + "in_proj_z.weight"),
        "gdn/a_projection": take(sd, s + "in_proj_a.weight"),
        "gdn/b_projection": take(sd, s + "in_proj_b.weight"),
        "gdn/a_log": take(sd, s + "A_log"),
        "gdn/dt_bias": take(sd, s + "dt_bias"),
        "gdn/convolution": take(sd, s + "conv1d.weight", conv_shape)[:, 0, :].T,
        "gdn/norm": take(sd, s + "norm.weight"),
        "gdn/output": take(sd, s + "out_proj.weight"),
    }


def _dense(sd: Mapping[str, np.ndarray], src: str) -> dict:
    return {
        f"mlp/{role}": take(sd, f"{src}mlp.{role}_proj.weight") for role in ("gate", "up", "down")
    }


def _moe(sd: Mapping[str, np.ndarray], src: str, config: Qwen35Config) -> dict:
    """v5 in-memory experts are fused [E, 2I, H] (gate rows, then up) and [E, H, I]; hub files
    carry experts.{e}.{gate,up,down}_proj (qwen-math §1.3). Both are accepted."""
    m, i = src + "mlp.", config.moe_intermediate_size
    out = {
        "moe/router": take(sd, m + "gate.weight"),
        "moe/shared_score": take(sd, m + "shared_expert_gate.weight"),
    }
    fused = m + "experts.gate_up_proj" in sd
    e, h = config.num_experts, config.hidden_size
    if fused:
        gate_up = take(sd, m + "experts.gate_up_proj", (e, 2 * i, h))
        downs = take(sd, m + "experts.down_proj", (e, h, i))
    for expert in range(e):
        p = f"moe/experts/{expert}/"
        if fused:
            out[p + "gate"] = gate_up[expert, :i]
            out[p + "up"] = gate_up[expert, i:]
            out[p + "down"] = downs[expert]
        else:
            for role in ("gate", "up", "down"):
                out[p + role] = take(sd, f"{m}experts.{expert}.{role}_proj.weight")
    for role in ("gate", "up", "down"):
        out[f"moe/shared/{role}"] = take(sd, f"{m}shared_expert.{role}_proj.weight")
    return out


def canonical_from_hf(
    state_dict: Mapping[str, np.ndarray], config: Qwen35Config
) -> dict[str, np.ndarray]:
    """Every §6.2 text parameter as a float32 array, from a transformers state dict.

    With tied embeddings `text/output_head` is the embedding itself (the checkpoint has no
    lm_head.weight).
    """
    src = _prefix(state_dict)
    embedding = take(state_dict, src + "embed_tokens.weight")
    out = {
        TEXT_PREFIX + "token_embedding": embedding,
        TEXT_PREFIX + "final_norm": take(state_dict, src + "norm.weight"),
        TEXT_PREFIX + "output_head": embedding
        if config.tie_word_embeddings
        else take(state_dict, "lm_head.weight"),
    }
    for i, kind in enumerate(config.layer_types):
        s = f"{src}layers.{i}."
        layer = {
            "input_norm": take(state_dict, s + "input_layernorm.weight"),
            "post_attention_norm": take(state_dict, s + "post_attention_layernorm.weight"),
        }
        layer |= (_attention if kind == FULL_ATTENTION else _gdn)(state_dict, s, config)
        layer |= _moe(state_dict, s, config) if config.is_moe else _dense(state_dict, s)
        out |= {layer_prefix(i) + k: v for k, v in layer.items()}
    for p in text_parameters(config.json):  # a wrongly sized source tensor, named canonically
        if out[p.name].shape != p.shape:
            raise InvalidError(
                "ninfer3.text.hf_shape",
                f"{p.name} comes out {out[p.name].shape}, expected {p.shape}",
                path=p.name,
            )
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def weights_from_hf(
    state_dict: Mapping[str, np.ndarray], hf_config: Mapping[str, Any]
) -> tuple[Qwen35Config, Qwen35Weights]:
    """(config, weights) of a transformers Qwen3.5 text model; arrays may be any float dtype."""
    config = validate_text_config(text_config_from_hf(hf_config))
    assert config.json["architectures"][0] in (DENSE_ARCHITECTURE, MOE_ARCHITECTURE)
    return config, weights_from_parameters(config, canonical_from_hf(state_dict, config))
