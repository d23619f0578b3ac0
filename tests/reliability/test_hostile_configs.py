"""Hostile checkpoint configs and GGUF metadata (issue 35 item 6;
weightfile/convert/config_values.py, spec/vqf.md §arch-semantics).

The reproducers: `Infinity` / `1e400` sizes (a raw OverflowError), a list where a number belongs
(TypeError), a 100,000-digit integer (Python's int-digits ValueError), a non-UTF-8 chat template
(UnicodeDecodeError), GGUF head count 0 (ZeroDivisionError) or a string, an embedding length that
is an array — all raw tracebacks; a NaN or infinite RoPE base, a NaN or negative norm epsilon and
a head size of 0 accepted and written; `convert DIR` with a FIFO for DIR/config.json waiting
forever. Each is now a typed error, and a Hypothesis property over generated hostile values (and
these) holds that an import ends in a typed error or in a file that verifies.

The checkpoints are written here with NumPy and safetensors (F32), the GGUF files with gguf-py's
own writer: one decoder layer of the smallest geometry the VQF importer takes.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from weightfile.cli import main
from weightfile.convert.config_values import COUNTS, IDS, POSITIVE_REALS, SIZES
from weightfile.convert.dispatch import ConvertOptions, convert, source_kind
from weightfile.families.qwen3.from_gguf import GGUF_LAYER
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, LM_HEAD
from weightfile.spec.errors import FileAccessError, InvalidError, WeightfileError

gguf = pytest.importorskip("gguf", reason="GGUF sources need the 'external' extra (gguf)")

CONFIG: dict[str, Any] = {
    "model_type": "qwen3",
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
#: LayerWeights field -> its shape in the tiny geometry (rows, columns).
SHAPES = {
    "attn_norm": (32,), "q_proj": (32, 32), "k_proj": (16, 32), "v_proj": (16, 32),
    "q_norm": (16,), "k_norm": (16,), "o_proj": (32, 32), "ffn_norm": (32,),
    "gate_proj": (32, 32), "up_proj": (32, 32), "down_proj": (32, 32),
}  # fmt: skip


def tiny_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(35)
    out = {EMBED: rng.standard_normal((64, 32)), FINAL_NORM: np.ones(32), LM_HEAD: None}
    out[LM_HEAD] = rng.standard_normal((64, 32))
    for field, shape in SHAPES.items():
        out[f"model.layers.0.{LAYER_TENSORS[field]}"] = rng.standard_normal(shape)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


WEIGHTS = tiny_weights()


def checkpoint(folder: Path, config_text: str) -> Path:
    """A tiny Qwen3 checkpoint whose config.json is `config_text` exactly."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(WEIGHTS, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(config_text)
    return folder


def with_value(key: str, raw_json: str) -> str:
    """CONFIG's text with `key`'s value replaced by the JSON text `raw_json` (which may be one
    Python's json would never write: Infinity, 1e400, 100,000 digits)."""
    text = json.dumps({**CONFIG, key: "@@"})
    return text.replace('"@@"', raw_json)


def imported(tmp_path: Path, config_text: str) -> Path | WeightfileError:
    """Convert a checkpoint with this config: the typed error, or the path of a file that has
    verified."""
    src = checkpoint(tmp_path / "hf", config_text)
    out = tmp_path / "out.vqf"
    try:
        convert(src, out, ConvertOptions(overwrite=True))
    except WeightfileError as exc:
        return exc
    assert main(["verify", str(out)]) == 0
    return out


def refused(tmp_path: Path, config_text: str) -> InvalidError:
    result = imported(tmp_path, config_text)
    assert isinstance(result, InvalidError), result
    assert result.rule == "vqf.import.config"
    return result


def test_the_tiny_checkpoint_imports_and_verifies(tmp_path: Path) -> None:
    assert isinstance(imported(tmp_path, json.dumps(CONFIG)), Path)


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("hidden_size", "Infinity"),
        ("hidden_size", "1e400"),
        ("vocab_size", "-Infinity"),
        ("num_attention_heads", "[2]"),
        ("max_position_embeddings", "[128]"),
        ("intermediate_size", '"32"'),
        ("vocab_size", "1" + "0" * 100000),
        ("rope_theta", "NaN"),
        ("rope_theta", "Infinity"),
        ("rope_theta", "1e39"),  # finite in binary64, infinite in the binary32 arch field
        ("rms_norm_eps", "NaN"),
        ("rms_norm_eps", "-1e-6"),
        ("rms_norm_eps", "1e-50"),  # rounds to 0 in binary32
        ("head_dim", "0"),
        ("num_key_value_heads", "0"),
        ("num_hidden_layers", "true"),
        ("eos_token_id", "[2, -1]"),
    ],
)
def test_a_hostile_config_value_is_a_typed_error(tmp_path: Path, key: str, raw: str) -> None:
    error = refused(tmp_path, with_value(key, raw))
    assert len(str(error)) < 300  # a 100,000-digit value is not echoed back


def test_heads_that_cannot_be_grouped_are_refused(tmp_path: Path) -> None:
    refused(tmp_path, json.dumps({**CONFIG, "num_key_value_heads": 3}))  # 2 heads, 3 groups


def test_a_chat_template_that_is_not_utf8_is_refused_before_writing(tmp_path: Path) -> None:
    src = checkpoint(tmp_path / "hf", json.dumps(CONFIG))
    (src / "chat_template.jinja").write_bytes(b"{{ messages }}\xff\xfe")
    with pytest.raises(InvalidError) as info:
        convert(src, tmp_path / "out.vqf", ConvertOptions())
    assert (info.value.rule, info.value.path) == ("vqf.import.config", "chat_template.jinja")
    assert not (tmp_path / "out.vqf").exists()


def test_a_fifo_config_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Sniffing and reading open config.json without blocking and refuse what is not a regular
    file (before: `convert DIR` blocked forever opening the FIFO)."""
    src = tmp_path / "hf"
    src.mkdir()
    save_file(WEIGHTS, str(src / "model.safetensors"))
    os.mkfifo(src / "config.json")
    assert source_kind(src) == "hf/qwen3"
    with pytest.raises(FileAccessError) as info:
        convert(src, tmp_path / "out.vqf", ConvertOptions())
    assert info.value.rule == "format.file.not_regular"


def test_a_fifo_source_is_refused_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "model.gguf")
    with pytest.raises(FileAccessError) as info:
        source_kind(tmp_path / "model.gguf")
    assert info.value.rule == "format.file.not_regular"


# --- the property over generated hostile values ----------------------------------------------

#: Every key the VQF importers read, and one they do not.
KEYS = sorted((COUNTS | SIZES | IDS | POSITIVE_REALS) & set(CONFIG) | {"unrelated_key"})


def json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=True)  # NaN and Infinity as Python writes them


HOSTILE_TEXT = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=-3, max_value=70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(json_text),
    st.sampled_from(["1e400", "-1e400", "1" + "0" * 5000, "null", "true", '"8"', "{}", "[]"]),
    st.lists(st.integers(-2, 2**33), max_size=3).map(json_text),
    st.text(max_size=4).map(json_text),
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.dictionaries(st.sampled_from(KEYS), HOSTILE_TEXT, min_size=1, max_size=3))
def test_any_hostile_config_is_a_typed_error_or_a_file_that_verifies(
    tmp_path_factory: pytest.TempPathFactory, edits: dict[str, str]
) -> None:
    text = json.dumps({**CONFIG, **{k: f"@{k}@" for k in edits}})
    for key, raw in edits.items():
        text = text.replace(f'"@{key}@"', raw)
    result = imported(tmp_path_factory.mktemp("prop"), text)
    assert isinstance(result, WeightfileError | Path)


# --- GGUF metadata ------------------------------------------------------------------------------

#: GGUF metadata of the tiny model, each key after "qwen3.", as gguf-py writes it.
GGUF_METADATA: dict[str, Any] = {
    "embedding_length": 32,
    "feed_forward_length": 32,
    "block_count": 1,
    "attention.head_count": 2,
    "attention.head_count_kv": 1,
    "attention.key_length": 16,
    "rope.freq_base": 10000.0,
    "attention.layer_norm_rms_epsilon": 1e-6,
    "context_length": 128,
}


def gguf_file(path: Path, **overrides: Any) -> Path:
    """The tiny model as a qwen3 GGUF file (F32 tensors), its metadata changed by `overrides`
    (keys with "." written as "__"); a value's Python type picks its GGUF type."""
    writer = gguf.GGUFWriter(str(path), "qwen3")
    meta = {**GGUF_METADATA, **{k.replace("__", "."): v for k, v in overrides.items()}}
    for key, value in meta.items():
        name = f"qwen3.{key}"
        if isinstance(value, bool | str):
            (writer.add_bool if isinstance(value, bool) else writer.add_string)(name, value)
        elif isinstance(value, list):
            writer.add_array(name, value)
        elif isinstance(value, float):
            writer.add_float32(name, value)
        else:
            writer.add_uint32(name, value)
    names = {EMBED: "token_embd.weight", FINAL_NORM: "output_norm.weight", LM_HEAD: "output.weight"}
    names |= {f"model.layers.0.{LAYER_TENSORS[f]}": f"blk.0.{GGUF_LAYER[f]}" for f in SHAPES}
    for hf_name, array in WEIGHTS.items():
        writer.add_tensor(names[hf_name], array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_tiny_gguf_file_imports_and_verifies(tmp_path: Path) -> None:
    src = gguf_file(tmp_path / "m.gguf")
    convert(src, tmp_path / "out.vqf", ConvertOptions(requantize=True))
    assert main(["verify", str(tmp_path / "out.vqf")]) == 0


@pytest.mark.parametrize(
    "override",
    [
        {"attention__head_count": 0},
        {"attention__head_count": "two"},
        {"embedding_length": [32]},
        {"rope__freq_base": math.nan},
        {"rope__freq_base": math.inf},
        {"attention__layer_norm_rms_epsilon": math.nan},
        {"attention__layer_norm_rms_epsilon": -1e-6},
        {"attention__key_length": 0},
        {"block_count": True},
    ],
    ids=lambda o: f"{next(iter(o))}={next(iter(o.values()))!r}",
)
def test_hostile_gguf_metadata_is_a_typed_error(tmp_path: Path, override: dict[str, Any]) -> None:
    src = gguf_file(tmp_path / "m.gguf", **override)
    with pytest.raises(InvalidError) as info:
        convert(src, tmp_path / "out.vqf", ConvertOptions(requantize=True))
    assert info.value.rule == "vqf.import.config"
    assert info.value.path == "qwen3." + next(iter(override)).replace("__", ".")


# --- the other families' readers: Qwen3.5 (-> .ninfer) and Qwen3-VL ------------------------------


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"full_attention_interval": 0}, "full_attention_interval"),  # was ZeroDivisionError
        ({"num_hidden_layers": 10**7}, "num_hidden_layers"),  # a 10^7-item layer_types list
        ({"text_config": {"hidden_size": "1e400"}}, "text_config.hidden_size"),
        ({"rope_parameters": {"rope_theta": -1.0}}, "rope_parameters.rope_theta"),
        ({"partial_rotary_factor": 2.5}, "partial_rotary_factor"),
    ],
)
def test_the_qwen35_reader_checks_values_first(
    tmp_path: Path, edit: dict[str, Any], key: str
) -> None:
    src = tmp_path / "hf"
    src.mkdir()
    config = {"model_type": "qwen3_5_text", "num_hidden_layers": 4, **edit}
    (src / "config.json").write_text(json.dumps(config))
    with pytest.raises(InvalidError) as info:
        convert(src, tmp_path / "out.ninfer", ConvertOptions())
    assert (info.value.rule, info.value.path) == ("qwen35.import.config", key)


#: A vision_config with every key the reader requires (the reader fails on a value, not a gap).
VISION = {
    "depth": 1, "hidden_size": 32, "num_heads": 2, "intermediate_size": 32,
    "num_position_embeddings": 16, "out_hidden_size": 32,
}  # fmt: skip


@pytest.mark.parametrize(
    ("vision", "key"),
    [
        ({"patch_size": "Infinity"}, "config.json"),  # was OverflowError; refused parsing
        ({"patch_size": 1e300}, "vision_config.patch_size"),
        ({"depth": [2]}, "vision_config.depth"),
        ({"deepstack_visual_indexes": [1, -1]}, "vision_config.deepstack_visual_indexes"),
    ],
)
def test_the_qwen3_vl_reader_checks_vision_values(
    tmp_path: Path, vision: dict[str, Any], key: str
) -> None:
    vision = {**VISION, **vision}
    text_config = {**CONFIG, "rope_parameters": {"mrope_section": [4, 2, 2]}}  # head_dim/2 = 8
    config = {"model_type": "qwen3_vl", "text_config": text_config, "vision_config": vision}
    text = json.dumps(config)
    text = text.replace('"Infinity"', "Infinity")
    result = imported(tmp_path, text)
    assert isinstance(result, InvalidError)
    assert (result.rule, result.path) == ("vqf.import.config", key)
