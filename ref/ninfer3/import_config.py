"""`components.text.config` from a Hugging Face Qwen3.5 config.json (ninfer-v3.md §6.1).

The converter normalises the upstream text config into the closed key set of §6.1: the text
part of a multimodal config (`text_config`) is taken, only the keys of
`spec.ninfer3.text_config.CONFIG_KEYS` are kept (required, then each conditional group that the
layer types or the architecture call for), and `rope_parameters` is closed to `rope_theta`,
`partial_rotary_factor` and `mrope_section`. A text-only checkpoint may omit `mrope_section`;
every position axis then carries the same position, so the section cannot change a result, and
the interleaved section that the §6.1 check accepts is derived from the rotary width.

Everything the reference cannot represent faithfully is refused rather than dropped: biases,
another activation, another RoPE type, non-interleaved MRoPE, MoE (not imported yet).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.ninfer3.text_config import (
    DENSE_ARCHITECTURE,
    FULL_ATTENTION,
    LAYER_TYPES,
    LINEAR_ATTENTION,
    MODEL_TYPES,
    Group,
    interleaved_counts,
    keys_of,
    rotary_dim,
)

CONFIG_RULE = "qwen35.import.config"
UNSUPPORTED_RULE = "qwen35.import.unsupported"
#: HF keys whose only value the reference implements, and that value.
FIXED_HF_VALUES = {"hidden_act": "silu", "attention_bias": False, "rope_type": "default"}


def text_part(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config: `text_config` of a multimodal checkpoint, else the config itself."""
    inner = cfg.get("text_config")
    if inner is None:
        return cfg
    if not isinstance(inner, Mapping):
        raise InvalidError(CONFIG_RULE, "text_config is not an object", path="text_config")
    return inner


def require_key(cfg: Mapping[str, Any], key: str) -> Any:
    """A key the §6.1 group needs; its absence is an InvalidError naming it."""
    if key not in cfg or cfg[key] is None:
        raise InvalidError(CONFIG_RULE, f"config.json has no {key}", path=key)
    return cfg[key]


def require_supported(cfg: Mapping[str, Any]) -> None:
    """Refuse the variants the reference forward pass does not compute (module docstring)."""
    rope = cfg.get("rope_parameters") or {}
    seen = {**{k: cfg.get(k) for k in ("hidden_act", "attention_bias")}, **rope}
    for key, want in FIXED_HF_VALUES.items():
        if key in seen and seen[key] is not None and seen[key] != want:
            raise UnsupportedError(UNSUPPORTED_RULE, f"{key} {seen[key]!r}", path=key)
    if rope.get("mrope_interleaved") is False:
        raise UnsupportedError(UNSUPPORTED_RULE, "non-interleaved MRoPE", path="rope_parameters")
    if cfg.get("num_experts"):
        raise UnsupportedError(UNSUPPORTED_RULE, "MoE checkpoints are not imported yet")


def layer_types(cfg: Mapping[str, Any]) -> list[str]:
    """`layer_types`, one legal name per layer (§6.1)."""
    n = require_key(cfg, "num_hidden_layers")
    types = require_key(cfg, "layer_types")
    if not isinstance(types, list) or len(types) != n or any(t not in LAYER_TYPES for t in types):
        raise InvalidError(
            CONFIG_RULE, f"layer_types must list {n} of {LAYER_TYPES}", path="layer_types"
        )
    return list(types)


def derived_mrope_section(pairs: int) -> list[int]:
    """The interleaved section with every pair r%3==1 on axis 1 and r%3==2 on axis 2.

    For `pairs` rotary pairs this is a fixed point of `interleaved_counts`, so §6.1 accepts it
    (for 32 pairs it is [11, 11, 10], the Qwen3.5 value).
    """
    s1 = len(range(1, pairs, 3))
    s2 = len(range(2, pairs, 3))
    return [pairs - s1 - s2, s1, s2]


def rope_parameters(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The closed rope_parameters of §6.1; an invalid upstream section is an InvalidError."""
    rope = require_key(cfg, "rope_parameters")
    theta = float(require_key(rope, "rope_theta"))
    factor = float(rope.get("partial_rotary_factor", 1.0))
    rotary = rotary_dim(int(require_key(cfg, "head_dim")), factor)
    if not (math.isfinite(theta) and theta > 0 and 0 < factor <= 1) or rotary <= 0 or rotary % 2:
        raise InvalidError(
            CONFIG_RULE, f"rope_theta {theta}, factor {factor}", path="rope_parameters"
        )
    pairs = rotary // 2
    section = rope.get("mrope_section")
    if section is None:
        section = derived_mrope_section(pairs)
    section = list(section)
    if (
        len(section) != 3
        or sum(section) != pairs
        or interleaved_counts(pairs, tuple(section)) != (tuple(section))
    ):
        raise InvalidError(
            CONFIG_RULE, f"mrope_section {section} for {pairs} rotary pairs", path="mrope_section"
        )
    return {"rope_theta": theta, "partial_rotary_factor": factor, "mrope_section": section}


def text_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The closed `components.text.config` of a dense Qwen3.5 HF config.json (§6.1)."""
    text = text_part(cfg)
    require_supported(text)
    types = layer_types(text)
    out: dict[str, Any] = {
        "architectures": [DENSE_ARCHITECTURE],
        "model_type": MODEL_TYPES[DENSE_ARCHITECTURE],
    }
    for key in keys_of(Group.REQUIRED):
        if key not in (*out, "layer_types", "tie_word_embeddings"):
            out[key] = require_key(text, key)
    # multimodal checkpoints keep the flag at the top level; transformers' default is untied
    tied = text.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))
    out["tie_word_embeddings"] = bool(tied)
    out["layer_types"] = types
    if FULL_ATTENTION in types:
        for key in keys_of(Group.ATTENTION):
            if key != "rope_parameters":
                out[key] = require_key(text, key)
        out["rope_parameters"] = rope_parameters(text)
    if LINEAR_ATTENTION in types:
        for key in keys_of(Group.GDN):
            out[key] = require_key(text, key)
    for key in keys_of(Group.DENSE):
        out[key] = require_key(text, key)
    return out
