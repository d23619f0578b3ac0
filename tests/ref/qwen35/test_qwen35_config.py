"""The closed spec/ninfer3.md §qwen35-config text config: every rule rejects its case with its rule
id and JSON path."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from strategies.ninfer3 import EXAMPLE_SHARDED, EXAMPLE_TEXT, raises_rule
from strategies.qwen35 import tiny_config_json

from weightfile.ref.qwen35.config import ConfigKey, Qwen35Config, validate_text_config
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.text_config import CONFIG_KEYS

P = "components.text.config."
Edit = Callable[[dict[str, Any]], None]


def setter(key: str, value: Any) -> Edit:
    return lambda c: c.__setitem__(key, value)


def deleter(key: str) -> Edit:
    return lambda c: c.__delitem__(key)


def rope(key: str, value: Any) -> Edit:
    return lambda c: c["rope_parameters"].__setitem__(key, value)


CASES: list[tuple[str, bool, Edit, str, str]] = [
    ("unknown key", False, setter("hidden_act", "silu"), "key", "hidden_act"),
    ("moe key on dense", False, setter("num_experts", 4), "key", "num_experts"),
    ("dense key on moe", True, setter("intermediate_size", 8), "key", "intermediate_size"),
    ("no hidden_size", False, deleter("hidden_size"), "missing", "hidden_size"),
    ("no architectures", False, deleter("architectures"), "missing", "architectures"),
    ("no head_dim", False, deleter("head_dim"), "missing", "head_dim"),
    (
        "no conv kernel",
        False,
        deleter("linear_conv_kernel_dim"),
        "missing",
        "linear_conv_kernel_dim",
    ),
    ("no intermediate", False, deleter("intermediate_size"), "missing", "intermediate_size"),
    (
        "no shared expert",
        True,
        deleter("shared_expert_intermediate_size"),
        "missing",
        "shared_expert_intermediate_size",
    ),
    ("zero size", False, setter("hidden_size", 0), "value", "hidden_size"),
    ("size over u32", False, setter("vocab_size", 2**32), "value", "vocab_size"),
    ("boolean size", False, setter("head_dim", True), "value", "head_dim"),
    ("float size", False, setter("head_dim", 16.0), "value", "head_dim"),
    ("eps zero", False, setter("rms_norm_eps", 0), "value", "rms_norm_eps"),
    ("eps underflows f32", False, setter("rms_norm_eps", 1e-50), "value", "rms_norm_eps"),
    ("eps overflows f32", False, setter("rms_norm_eps", 1e39), "value", "rms_norm_eps"),
    ("tie not boolean", False, setter("tie_word_embeddings", 0), "value", "tie_word_embeddings"),
    (
        "unknown architecture",
        False,
        setter("architectures", ["Qwen3ForCausalLM"]),
        "architecture",
        "architectures",
    ),
    (
        "two architectures",
        False,
        setter("architectures", ["Qwen3_5ForCausalLM"] * 2),
        "architecture",
        "architectures",
    ),
    (
        "unpaired model_type",
        False,
        setter("model_type", "qwen3_5_moe_text"),
        "architecture",
        "model_type",
    ),
    (
        "short layer_types",
        False,
        setter("layer_types", ["full_attention"]),
        "layer_types",
        "layer_types",
    ),
    (
        "bad layer type",
        False,
        setter("layer_types", ["full_attention", "sliding_attention", "linear_attention"]),
        "layer_types",
        "layer_types[1]",
    ),
    ("gqa", False, setter("num_key_value_heads", 3), "heads", "num_attention_heads"),
    ("gdn heads", False, setter("linear_num_key_heads", 3), "heads", "linear_num_value_heads"),
    ("rope extra member", False, rope("rope_type", "default"), "rope", "rope_parameters"),
    ("rope theta 0", False, rope("rope_theta", 0), "rope", "rope_parameters.rope_theta"),
    (
        "factor 0",
        False,
        rope("partial_rotary_factor", 0),
        "rope",
        "rope_parameters.partial_rotary_factor",
    ),
    (
        "factor above 1",
        False,
        rope("partial_rotary_factor", 1.5),
        "rope",
        "rope_parameters.partial_rotary_factor",
    ),
    (
        "odd rotary",
        False,
        rope("partial_rotary_factor", 0.0625),
        "rope",
        "rope_parameters.partial_rotary_factor",
    ),
    (
        "two sections",
        False,
        rope("mrope_section", [2, 2]),
        "mrope_section",
        "rope_parameters.mrope_section",
    ),
    (
        "negative section",
        False,
        rope("mrope_section", [5, -1, 0]),
        "mrope_section",
        "rope_parameters.mrope_section",
    ),
    (
        "sections sum",
        False,
        rope("mrope_section", [2, 2, 1]),
        "mrope_section",
        "rope_parameters.mrope_section",
    ),
    (
        "not interleavable",
        False,
        rope("mrope_section", [1, 2, 1]),
        "mrope_section",
        "rope_parameters.mrope_section",
    ),
    (
        "top-k above experts",
        True,
        setter("num_experts_per_tok", 5),
        "experts",
        "num_experts_per_tok",
    ),
]


@pytest.mark.parametrize(
    ("moe", "edit", "rule", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule_rejects_its_case(moe: bool, edit: Edit, rule: str, path: str) -> None:
    config = tiny_config_json(moe)
    edit(config)
    with raises_rule(InvalidError, f"ninfer3.text.{rule}") as info:
        validate_text_config(config)
    assert info.value.path == P + path


def test_config_must_be_an_object() -> None:
    with raises_rule(InvalidError, "ninfer3.text.value"):
        validate_text_config([])


def test_gdn_keys_are_required_once_any_is_present() -> None:
    config = tiny_config_json()
    config["layer_types"] = ["full_attention"] * 3
    validate_text_config(config)  # GDN keys present and complete: accepted
    del config["linear_key_head_dim"]
    with raises_rule(InvalidError, "ninfer3.text.missing") as info:
        validate_text_config(config)
    assert info.value.path == P + "linear_key_head_dim"


def test_attention_keys_are_optional_without_full_attention_layers() -> None:
    config = tiny_config_json()
    config["layer_types"] = ["linear_attention"] * 3
    for key in ("num_attention_heads", "num_key_value_heads", "head_dim", "rope_parameters"):
        del config[key]
    assert validate_text_config(config).num_attention_heads is None


@pytest.mark.parametrize("example", [EXAMPLE_TEXT, EXAMPLE_SHARDED], ids=["text", "sharded"])
def test_the_published_example_configs_are_valid(example) -> None:
    config = json.loads(example.read_text(encoding="utf-8"))["components"]["text"]["config"]
    c = validate_text_config(config)
    assert (c.rotary_dim, c.mrope_section, c.is_moe) == (32, (6, 5, 5), False)


@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_every_closed_set_key_is_a_declared_attribute(moe: bool) -> None:
    """Declared (visible to type checkers), not found dynamically; absent keys read None."""
    config = validate_text_config(tiny_config_json(moe))
    for key in CONFIG_KEYS:
        assert isinstance(getattr(Qwen35Config, key), ConfigKey), key
        assert getattr(config, key) == config.json.get(key), key
    assert config.intermediate_size is None if moe else config.num_experts is None
    with pytest.raises(AttributeError):
        _ = config.not_a_key  # type: ignore[attr-defined]
