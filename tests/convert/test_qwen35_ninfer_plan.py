"""The importer's plan: parents, bindings, uses, the closed text config (spec/ninfer3.md §binding,
§qwen35-text)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.families.qwen35.hf_names import parameter_values, source
from weightfile.families.qwen35.to_ninfer import SHAPE_RULE
from weightfile.families.qwen35.to_ninfer_config import derived_mrope_section, text_config
from weightfile.families.qwen35.to_ninfer_plan import bindings, plan_parents, uses
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.ninfer3.text_config import interleaved_counts
from weightfile.spec.ninfer3.text_names import text_parameters

HF = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "hidden_size": 64,
    "intermediate_size": 96,
    "vocab_size": 300,
    "num_hidden_layers": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "layer_types": ["linear_attention", "full_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25},
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 16,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
    "hidden_act": "silu",
    "attention_bias": False,
    "use_cache": True,
}


@given(st.integers(min_value=1, max_value=512))
def test_derived_mrope_section_passes_the_interleaved_check(pairs):
    section = derived_mrope_section(pairs)
    assert sum(section) == pairs and min(section) >= 0
    assert interleaved_counts(pairs, tuple(section)) == tuple(section)


def test_qwen35_section_is_derived_for_32_pairs():
    # head_dim 256, factor 0.25 (spec/ninfer3.md §examples example)
    assert derived_mrope_section(32) == [11, 11, 10]


def test_text_config_is_the_closed_set():
    config = text_config(HF)
    assert "hidden_act" not in config and "use_cache" not in config  # not
    # spec/ninfer3.md §qwen35-config keys
    assert config["rope_parameters"] == {
        "rope_theta": 1e7, "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0]
    }  # fmt: skip
    # a multimodal config nests the text part; its own tie flag wins over the top-level one
    assert text_config({"text_config": HF, "tie_word_embeddings": True}) == config
    nested = {"text_config": {k: v for k, v in HF.items() if k != "tie_word_embeddings"}}
    assert text_config({**nested, "tie_word_embeddings": True})["tie_word_embeddings"] is True


@pytest.mark.parametrize(
    ("change", "error", "path"),
    [
        ({"hidden_act": "gelu"}, UnsupportedError, "hidden_act"),
        ({"attention_bias": True}, UnsupportedError, "attention_bias"),
        ({"num_experts": 8}, UnsupportedError, "num_experts"),
        ({"text_config": [1]}, InvalidError, "text_config"),
        ({"rope_parameters": {**HF["rope_parameters"], "mrope_interleaved": False}},
         UnsupportedError, "rope_parameters"),
    ],
)  # fmt: skip
def test_text_config_refusals_are_typed(change, error, path):
    with pytest.raises(error) as info:
        text_config({**HF, **change})
    assert info.value.rule.startswith("qwen35.import.")
    assert info.value.path == path


def test_the_normaliser_and_validator_errors_pass_through_typed():
    with pytest.raises(InvalidError) as info:  # qwen35.hf.text_config_from_hf's own check
        text_config({**HF, "model_type": "qwen3"})
    assert info.value.path == "model_type"
    with pytest.raises(InvalidError) as info:  # the spec/ninfer3.md §qwen35-config validator's
        text_config({**HF, "head_dim": 0})
    assert info.value.rule.startswith("ninfer3.text.") and "head_dim" in (info.value.path or "")


@pytest.mark.parametrize("fmt", ["bf16", "q5_g64_fp16"])
@pytest.mark.parametrize("tied", [False, True])
def test_every_parameter_is_bound_once_and_parents_are_covered(fmt, tied):
    config = text_config({**HF, "tie_word_embeddings": tied})
    parents = plan_parents(config, fmt)
    by_id = {p.id: p for p in parents}
    assert len(by_id) == len(parents)
    found = bindings(parents, tied)
    params = {p.name: p for p in text_parameters(config)}
    assert set(found) == set(params)
    covered: dict[str, list[tuple[int, int]]] = {p.id: [] for p in parents}
    for name, binding in found.items():
        if "object" in binding:
            assert by_id[binding["object"]].shape == params[name].shape  # whole: exact shape
            covered[binding["object"]].append((0, math.prod(params[name].shape)))
        else:
            ((part,),) = [binding["parts"]]
            begin, end = part["range"]
            assert end - begin == math.prod(params[name].shape)  # coverage
            # (spec/ninfer3.md §binding)
            assert begin % params[name].shape[1] == 0  # whole rows
            covered[part["object"]].append((begin, end))
    for parent in parents:  # the parts of each parent tile it exactly, in order
        spans = sorted(set(covered[parent.id]))
        assert spans[0][0] == 0 and spans[-1][1] == math.prod(parent.shape)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    formats = {p.id: p.format for p in parents}
    assert formats["w.layers/0/gdn/a_log"] == "fp32" and formats["w.final_norm"] == "bf16"
    assert formats["w.layers/1/attention/query+key+gate+value"] == fmt
    assert ("w.output_head" in formats) is not tied


def test_uses_are_one_per_consumed_input():
    config = text_config(HF)
    found = uses(config)
    assert {u["activation_policy"] for u in found} == {"A16Only"}
    pairs = [(u["parameter"], u["input"]) for u in found]
    assert len(pairs) == len(set(pairs))
    want = {(p.name, i) for p in text_parameters(config) for i in p.inputs}
    assert set(pairs) == want
    assert ("text/output_head", "text/final_hidden") in want


def test_unknown_format_is_refused():
    with pytest.raises(UnsupportedError) as info:
        plan_parents(text_config(HF), "nvfp4")
    assert info.value.rule == "qwen35.import.format"


def test_a_fused_source_of_the_wrong_size_is_refused():
    config = text_config(HF)
    params = {p.name: p for p in text_parameters(config)}
    h, rows = HF["hidden_size"], 2 * 32 + 64  # in_proj_qkv: 2·Kg + Vg rows
    for extra in (0, 1, -1):
        qkv = np.arange((rows + extra) * h, dtype=np.float32).reshape(rows + extra, h)
        for short in ("query", "key", "value"):
            name = f"text/layers/0/gdn/{short}"
            src = source(config, "model.", name)
            assert src.hf_name == "model.layers.0.linear_attn.in_proj_qkv.weight"
            if extra and short == "value":
                with pytest.raises(InvalidError) as info:
                    parameter_values(params[name], src, lambda _, t=qkv: t, SHAPE_RULE)
                assert info.value.rule == "qwen35.import.shape"
                assert info.value.path == src.hf_name
            else:
                got = parameter_values(params[name], src, lambda _, t=qkv: t, SHAPE_RULE)
                begin = {"query": 0, "key": 32, "value": 64}[short]
                assert got[0, 0] == begin * h  # its first row is row `begin` of the source


def test_a_tensor_that_cannot_be_read_keeps_its_own_error():
    """NotFoundError is a ValueError: it must not come out as a shape error of the tensor."""
    config = text_config(HF)
    name = "text/layers/0/gdn/query"
    param = next(p for p in text_parameters(config) if p.name == name)
    src = source(config, "model.", name)

    def missing(hf_name: str) -> np.ndarray:
        raise NotFoundError("qwen35.import.missing_tensor", f"{hf_name} is missing", path=hf_name)

    with pytest.raises(NotFoundError) as info:
        parameter_values(param, src, missing, SHAPE_RULE)
    assert info.value.rule == "qwen35.import.missing_tensor" and info.value.path == src.hf_name
