"""Validate `components.text.config` as the closed set and build `Qwen35Config`
(spec/ninfer3.md §qwen35-config).

The key table is `weightfile.spec.ninfer3.text_config`; here each spec/ninfer3.md §qwen35-config
rule is one function, applied in the order the table lists them, raising `InvalidError` with a
`ninfer3.text.*` rule id and the JSON path `components.text.config.<key>`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

import numpy as np

from weightfile.ref.ninfer3.require import require
from weightfile.spec.ninfer3.text_config import (
    CONFIG_KEYS,
    DENSE_ARCHITECTURE,
    FULL_ATTENTION,
    LAYER_TYPES,
    LINEAR_ATTENTION,
    MODEL_TYPES,
    MOE_ARCHITECTURE,
    MROPE_AXES,
    ROPE_PARAMETER_KEYS,
    U32_MAX,
    Domain,
    Group,
    interleaved_counts,
    keys_of,
    rotary_dim,
)

CONFIG_PATH = "components.text.config"


T = TypeVar("T")


class ConfigKey(Generic[T]):
    """A spec/ninfer3.md §qwen35-config key read as a typed attribute: `config.head_dim` is
    `config.json.get("head_dim")`.

    A key of a conditional group is None when the config does not have the group (head_dim
    without full-attention layers); its type says so."""

    key: str

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, config: None, owner: type) -> ConfigKey[T]: ...
    @overload
    def __get__(self, config: Qwen35Config, owner: type) -> T: ...
    def __get__(self, config: Qwen35Config | None, owner: type) -> T | ConfigKey[T]:
        if config is None:
            return self
        return cast(T, config.json.get(self.key))


@dataclass(frozen=True)
class Qwen35Config:
    """A validated Qwen3.5 text config; `json` is the closed config object itself, and every
    spec/ninfer3.md §qwen35-config key (spec/ninfer3/text_config.CONFIG_KEYS) is also a typed
    attribute."""

    json: Mapping[str, Any]

    # Group.REQUIRED
    architectures = ConfigKey[list[str]]()
    model_type = ConfigKey[str]()
    hidden_size = ConfigKey[int]()
    vocab_size = ConfigKey[int]()
    num_hidden_layers = ConfigKey[int]()
    max_position_embeddings = ConfigKey[int]()
    tie_word_embeddings = ConfigKey[bool]()
    rms_norm_eps = ConfigKey[float]()
    layer_types = ConfigKey[list[str]]()
    # Group.ATTENTION: present when a layer is full_attention
    num_attention_heads = ConfigKey[int | None]()
    num_key_value_heads = ConfigKey[int | None]()
    head_dim = ConfigKey[int | None]()
    rope_parameters = ConfigKey[dict[str, Any] | None]()
    # Group.GDN: present when a layer is linear_attention
    linear_num_key_heads = ConfigKey[int | None]()
    linear_key_head_dim = ConfigKey[int | None]()
    linear_num_value_heads = ConfigKey[int | None]()
    linear_value_head_dim = ConfigKey[int | None]()
    linear_conv_kernel_dim = ConfigKey[int | None]()
    # Group.DENSE or Group.MOE, by architecture
    intermediate_size = ConfigKey[int | None]()
    num_experts = ConfigKey[int | None]()
    num_experts_per_tok = ConfigKey[int | None]()
    moe_intermediate_size = ConfigKey[int | None]()
    shared_expert_intermediate_size = ConfigKey[int | None]()

    @property
    def is_moe(self) -> bool:
        return self.json["architectures"][0] == MOE_ARCHITECTURE

    @property
    def eps_f32(self) -> np.float32:
        return np.float32(self.json["rms_norm_eps"])

    @property
    def theta_f32(self) -> np.float32:
        return np.float32(self.json["rope_parameters"]["rope_theta"])

    @property
    def rotary_dim(self) -> int:
        rope = self.json["rope_parameters"]
        return rotary_dim(self.json["head_dim"], rope["partial_rotary_factor"])

    @property
    def mrope_section(self) -> tuple[int, int, int]:
        s = self.json["rope_parameters"]["mrope_section"]
        return (s[0], s[1], s[2])

    @property
    def group_size(self) -> int:
        """Query heads per kv head (GQA)."""
        return self.json["num_attention_heads"] // self.json["num_key_value_heads"]

    @property
    def gdn_key_dim(self) -> int:
        return self.json["linear_num_key_heads"] * self.json["linear_key_head_dim"]

    @property
    def gdn_value_dim(self) -> int:
        return self.json["linear_num_value_heads"] * self.json["linear_value_head_dim"]


def key_path(key: str, *more: str) -> str:
    return ".".join((CONFIG_PATH, key, *more))


def is_positive_f32(value: Any) -> bool:
    """A JSON number whose binary32 rounding is positive and finite (spec/ninfer3.md §qwen35-config
    rms_norm_eps)."""
    if type(value) not in (int, float) or not math.isfinite(value):
        return False
    try:
        as_f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return False
    return math.isfinite(as_f32) and as_f32 > 0


def check_scalar(key: str, value: Any) -> None:
    """A PositiveU32, boolean or positive f32 key holds a value of its domain."""
    domain = CONFIG_KEYS[key].domain
    if domain is Domain.POSITIVE_U32:
        ok = type(value) is int and 1 <= value <= U32_MAX
    elif domain is Domain.BOOLEAN:
        ok = type(value) is bool
    else:
        ok = is_positive_f32(value)
    require(
        ok, "ninfer3.text.value", f"{key} is not a {domain.value}: {value!r:.60}", key_path(key)
    )


def check_architecture(config: Mapping[str, Any]) -> str:
    """architectures is a 1-element array of a known name; model_type is its pair
    (spec/ninfer3.md §qwen35-config, Q9)."""
    arch = config["architectures"]
    ok = type(arch) is list and len(arch) == 1 and arch[0] in MODEL_TYPES
    require(
        ok,
        "ninfer3.text.architecture",
        f"unknown architectures {arch!r:.80}",
        key_path("architectures"),
    )
    want = MODEL_TYPES[arch[0]]
    require(
        config["model_type"] == want,
        "ninfer3.text.architecture",
        f"model_type {config['model_type']!r:.40} does not pair with {arch[0]} (wants {want})",
        key_path("model_type"),
    )
    return arch[0]


def check_members(config: Mapping[str, Any], architecture: str) -> None:
    """Closed set: no unknown key, no key of the other FFN kind; required keys present
    (spec/ninfer3.md §qwen35-config)."""
    for key in config:
        require(
            key in CONFIG_KEYS, "ninfer3.text.key", f"unknown config key {key!r}", key_path(key)
        )
    forbidden = keys_of(Group.DENSE if architecture == MOE_ARCHITECTURE else Group.MOE)
    for key in forbidden:
        require(
            key not in config,
            "ninfer3.text.key",
            f"{key} is forbidden for {architecture}",
            key_path(key),
        )
    for key in keys_of(Group.REQUIRED):
        require(
            key in config, "ninfer3.text.missing", f"required key {key} is absent", key_path(key)
        )


def check_layer_types(config: Mapping[str, Any]) -> list[str]:
    """layer_types has num_hidden_layers entries, each full_attention or linear_attention."""
    types, n = config["layer_types"], config["num_hidden_layers"]
    require(
        type(types) is list and len(types) == n,
        "ninfer3.text.layer_types",
        f"layer_types is not an array of {n} entries",
        key_path("layer_types"),
    )
    for i, kind in enumerate(types):
        require(
            kind in LAYER_TYPES,
            "ninfer3.text.layer_types",
            f"unknown layer type {kind!r:.40}",
            f"{key_path('layer_types')}[{i}]",
        )
    return types


def check_group(config: Mapping[str, Any], group: Group, needed: bool, why: str) -> bool:
    """A conditional group is all present when needed or when any of its keys is present."""
    keys = keys_of(group)
    if not (needed or any(k in config for k in keys)):
        return False
    for key in keys:
        require(key in config, "ninfer3.text.missing", f"{key} is required ({why})", key_path(key))
    return True


def check_heads(config: Mapping[str, Any], heads: str, kv: str) -> None:
    """heads % kv_heads == 0 (and value_heads % key_heads == 0 for GDN)."""
    require(
        config[heads] % config[kv] == 0,
        "ninfer3.text.heads",
        f"{heads} {config[heads]} is not a multiple of {kv} {config[kv]}",
        key_path(heads),
    )


def check_rope(config: Mapping[str, Any]) -> None:
    """rope_parameters: closed {rope_theta > 0 f32, 0 < factor <= 1, mrope_section}; the rotary
    width floor(head_dim · factor) positive and even (spec/ninfer3.md §qwen35-config RoPE row)."""
    rope = config["rope_parameters"]
    path = key_path("rope_parameters")
    require(type(rope) is dict, "ninfer3.text.rope", "rope_parameters is not an object", path)
    require(
        set(rope) == set(ROPE_PARAMETER_KEYS),
        "ninfer3.text.rope",
        f"rope_parameters members {sorted(rope)} != {sorted(ROPE_PARAMETER_KEYS)}",
        path,
    )
    theta, factor = rope["rope_theta"], rope["partial_rotary_factor"]
    require(
        is_positive_f32(theta),
        "ninfer3.text.rope",
        f"rope_theta {theta!r:.40} is not a positive f32",
        path + ".rope_theta",
    )
    ok = type(factor) in (int, float) and 0 < factor <= 1
    require(
        ok,
        "ninfer3.text.rope",
        f"partial_rotary_factor {factor!r:.40} not in (0, 1]",
        path + ".partial_rotary_factor",
    )
    rotary = rotary_dim(config["head_dim"], factor)
    require(
        rotary > 0 and rotary % 2 == 0,
        "ninfer3.text.rope",
        f"rotary width floor({config['head_dim']} * {factor}) = {rotary} is not positive and even",
        path + ".partial_rotary_factor",
    )
    check_mrope_section(rope["mrope_section"], rotary, path + ".mrope_section")


def check_mrope_section(section: Any, rotary: int, path: str) -> None:
    """3 ints >= 0 summing to rotary/2, equal to their interleaved axis counts
    (spec/ninfer3.md §qwen35-config)."""
    ok = type(section) is list and len(section) == MROPE_AXES
    ok = ok and all(type(s) is int and s >= 0 for s in section)
    require(
        ok, "ninfer3.text.mrope_section", f"mrope_section {section!r:.60} is not 3 ints >= 0", path
    )
    pairs = rotary // 2
    require(
        sum(section) == pairs,
        "ninfer3.text.mrope_section",
        f"mrope_section sums to {sum(section)}, not rotary/2 = {pairs}",
        path,
    )
    counts = interleaved_counts(pairs, (section[0], section[1], section[2]))
    require(
        list(counts) == section,
        "ninfer3.text.mrope_section",
        f"interleaved axis counts {list(counts)} differ from mrope_section {section}",
        path,
    )


def validate_text_config(config: Any) -> Qwen35Config:
    """Every spec/ninfer3.md §qwen35-config rule, in table order; returns the config as a
    `Qwen35Config`."""
    require(type(config) is dict, "ninfer3.text.value", "config is not an object", CONFIG_PATH)
    for key in ("architectures", "model_type"):
        require(
            key in config, "ninfer3.text.missing", f"required key {key} is absent", key_path(key)
        )
    architecture = check_architecture(config)
    check_members(config, architecture)
    for key, spec in CONFIG_KEYS.items():
        if key in config and spec.domain in (
            Domain.POSITIVE_U32,
            Domain.BOOLEAN,
            Domain.POSITIVE_F32,
        ):
            check_scalar(key, config[key])
    types = check_layer_types(config)
    if check_group(config, Group.ATTENTION, FULL_ATTENTION in types, "a full-attention layer"):
        check_heads(config, "num_attention_heads", "num_key_value_heads")
        check_rope(config)
    if check_group(config, Group.GDN, LINEAR_ATTENTION in types, "a linear-attention layer"):
        check_heads(config, "linear_num_value_heads", "linear_num_key_heads")
    is_moe = architecture == MOE_ARCHITECTURE
    check_group(config, Group.MOE if is_moe else Group.DENSE, True, architecture)
    if is_moe:
        require(
            config["num_experts_per_tok"] <= config["num_experts"],
            "ninfer3.text.experts",
            f"{config['num_experts_per_tok']} experts per token > {config['num_experts']} experts",
            key_path("num_experts_per_tok"),
        )
    assert architecture in (DENSE_ARCHITECTURE, MOE_ARCHITECTURE)
    return Qwen35Config(dict(config))
