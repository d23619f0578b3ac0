"""The spec/ninfer3.md §qwen35-config / §qwen35-names tables against independent facts: the two
published example directories (their bindings, object shapes and Uses) and the MRoPE sections of
real Qwen3.5 checkpoints."""

from __future__ import annotations

import json

import pytest
from strategies.ninfer3 import EXAMPLE_SHARDED, EXAMPLE_TEXT

from weightfile.spec.ninfer3.text_config import (
    CONFIG_KEYS,
    Group,
    interleaved_axis,
    interleaved_counts,
    keys_of,
    rotary_dim,
)
from weightfile.spec.ninfer3.text_names import fusion_groups, text_parameters


@pytest.mark.parametrize("example", [EXAMPLE_TEXT, EXAMPLE_SHARDED], ids=["text", "sharded"])
def test_example_bindings_are_exactly_the_canonical_names(example) -> None:
    doc = json.loads(example.read_text(encoding="utf-8"))
    config = doc["components"]["text"]["config"]
    assert set(config) <= set(CONFIG_KEYS)
    params = {p.name: p for p in text_parameters(config)}
    assert set(params) == set(doc["bindings"])
    shapes = {o["id"]: o["shape"] for o in doc["objects"] if o["kind"] == "tensor"}
    for name, binding in doc["bindings"].items():
        if "object" in binding:
            assert tuple(shapes[binding["object"]]) == params[name].shape, name
        else:
            count = sum(e - b for b, e in (p["range"] for p in binding["parts"]))
            want = 1
            for dim in params[name].shape:
                want *= dim
            assert count == want, name
    # Each example Use is a (parameter, input) the table declares, and every declared one is used.
    declared = {(p.name, i) for p in params.values() for i in p.inputs}
    assert {(u["parameter"], u["input"]) for u in doc["uses"]} == declared


def test_direct_formats_follow_the_binder_checks() -> None:
    config = {
        "hidden_size": 8,
        "vocab_size": 16,
        "num_hidden_layers": 2,
        "layer_types": ["linear_attention", "full_attention"],
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 4,
        "linear_num_key_heads": 1,
        "linear_key_head_dim": 4,
        "linear_num_value_heads": 2,
        "linear_value_head_dim": 4,
        "linear_conv_kernel_dim": 4,
        "intermediate_size": 12,
    }
    params = {p.name: p for p in text_parameters(config)}
    assert params["text/layers/0/gdn/a_log"].direct_format == "fp32"
    assert params["text/layers/0/gdn/dt_bias"].direct_format == "fp32"
    assert params["text/layers/0/gdn/convolution"].shape == (4, 2 * 4 + 8)
    assert params["text/layers/1/attention/query"].shape == (8, 8)
    assert params["text/layers/1/attention/key"].shape == (4, 8)
    assert params["text/output_head"].direct_format is None
    fp32 = {n for n, p in params.items() if p.direct_format == "fp32"}
    assert fp32 == {"text/layers/0/gdn/a_log", "text/layers/0/gdn/dt_bias"}
    assert all(
        p.direct_format == "bf16" for n, p in params.items() if p.is_direct and n not in fp32
    )
    groups = fusion_groups(config, 0)
    assert groups[0] == tuple(f"text/layers/0/gdn/{r}" for r in ("query", "key", "value", "z"))
    assert all(name in params for g in groups for name in g)


def test_moe_layers_name_every_expert() -> None:
    config = {
        "hidden_size": 8,
        "vocab_size": 16,
        "num_hidden_layers": 1,
        "layer_types": ["full_attention"],
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 4,
        "num_experts": 3,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 6,
        "shared_expert_intermediate_size": 5,
    }
    names = [p.name for p in text_parameters(config)]
    assert "text/layers/0/moe/experts/2/down" in names
    assert "text/layers/0/mlp/gate" not in names
    assert {p.name: p.shape for p in text_parameters(config)}["text/layers/0/moe/shared/down"] == (
        8,
        5,
    )


def test_interleaved_mrope_counts() -> None:
    # Qwen3.5-27B: head_dim 256, factor 0.25, mrope_section [11, 11, 10] (spec/models.md §qwen35).
    assert rotary_dim(256, 0.25) == 64
    assert interleaved_counts(32, (11, 11, 10)) == (11, 11, 10)
    # The examples: head_dim 128, factor 0.25, [6, 5, 5].
    assert interleaved_counts(rotary_dim(128, 0.25) // 2, (6, 5, 5)) == (6, 5, 5)
    # Hand-derived first pairs: t h w t h w ...
    assert [interleaved_axis(r, (6, 5, 5)) for r in range(6)] == [0, 1, 2, 0, 1, 2]
    # A section too large for its interleaved slots does not reproduce itself.
    assert interleaved_counts(16, (2, 7, 7)) != (2, 7, 7)


def test_key_groups_partition_the_closed_set() -> None:
    groups = [keys_of(g) for g in Group]
    assert sum(len(g) for g in groups) == len(CONFIG_KEYS)
    assert keys_of(Group.MOE) == (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
    )
