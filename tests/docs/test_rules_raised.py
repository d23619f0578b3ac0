"""The rows of the rule table no other test raised (spec/rules.py), each broken once through a
public entry point: the API, the codec registry or the command line (the importers only through
`weightfile import`, since their modules are moving to weightfile/convert/).
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from strategies.vqf import patch_bytes, patch_header
from tokenizers import Tokenizer, models

import weightfile
from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.errors import NotFoundError, UnsupportedError
from weightfile.spec.rules import RULES
from weightfile.spec.vqf.header import field_offset
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.tensor import VQFTensor


@pytest.fixture
def example(tmp_path: Path) -> Path:
    return Path(shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf"))


def run(model: Path, *extra: str) -> list[str]:
    return ["run", str(model), "--max-tokens", "1", "--engine", "ref", *extra]


def test_a_name_not_in_the_directory_is_not_found() -> None:
    """spec/vqf.md §loader-chain step 12: tensors are found by their exact name."""
    with weightfile.open_vqf(EXAMPLE_PATH) as vqf, pytest.raises(NotFoundError) as info:
        vqf.entry("q5_q")
    assert info.value.rule == "vqf.directory.name" and info.value.path == "q5_q"


def test_a_qtype_with_no_encoding_has_no_codec() -> None:
    """spec/vqf.md §qtype-codes: the qtype registry is closed."""
    with pytest.raises(UnsupportedError) as info:
        codec_for(0x7F, 0, "q8_q")
    assert info.value.rule == "vqf.codec.qtype"


def test_binding_refuses_a_tensor_of_the_wrong_qtype(example: Path, capsys) -> None:
    """spec/vqf.md §text-tensors: final_norm is F32; an F16 one is not bound."""
    with weightfile.open_vqf(example) as vqf:
        at = vqf.entry("final_norm").entry_offset + field_offset(VQFTensor, "qtype")
    patch_bytes(example, at, int(QType.F16).to_bytes(4, "little"))
    assert main(run(example, "--token-ids", "1")) == 1
    err = capsys.readouterr().err
    assert "InvalidError" in err and "vqf.bind.qtype" in err and "final_norm" in err


def test_binding_refuses_a_qwen3_without_qk_norms(example: Path, capsys) -> None:
    """spec/vqf.md §arch-semantics: the Qwen3 decoder needs has_q_norm."""
    patch_header(example, lambda h: h["arch"].update({"has_q_norm": 0}))
    assert main(run(example, "--token-ids", "1")) == 3  # unsupported feature: exit 3
    err = capsys.readouterr().err
    assert "UnsupportedError" in err and "vqf.bind.unsupported" in err


def test_a_prompt_that_encodes_to_no_tokens_is_refused(example: Path, tmp_path: Path, capsys):
    """spec/models.md §qwen3-forward: the forward pass needs at least one token."""
    tokenizer = tmp_path / "tokenizer.json"
    Tokenizer(models.WordLevel({"a": 1, "[UNK]": 0}, unk_token="[UNK]")).save(str(tokenizer))
    assert main(run(example, "--prompt", "", "--tokenizer", str(tokenizer))) == 1
    err = capsys.readouterr().err
    assert "InvalidError" in err and "frontend.prompt" in err and "no tokens" in err


# -- the importers, through `weightfile import` (the command stays where the code moves) -------

QWEN3_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 64,
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": True,
}  # fmt: skip
EMBED = "model.embed_tokens.weight"


def exit_code(rule: str) -> int:
    """The CLI's code for a rule's error: 3 for an unsupported feature, else 1 (README)."""
    return 3 if RULES[rule].error_class == "UnsupportedError" else 1


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A safetensors file of zero-filled float32-sized tensors: name -> (dtype, shape)."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = 4 * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))


def checkpoint(folder: Path, config: object, shards: dict[str, dict]) -> Path:
    folder.mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "config.json").write_text(text)
    for name, tensors in shards.items():
        write_safetensors(folder / name, tensors)
    return folder


IMPORT_FAULTS = {
    "vqf.import.config": ("{not json", {}),
    "vqf.import.dtype": (QWEN3_CONFIG, {"a.safetensors": {EMBED: ("I32", [64, 32])}}),
    "vqf.import.duplicate": (
        QWEN3_CONFIG,
        {"a.safetensors": {EMBED: ("F32", [64, 32])}, "b.safetensors": {EMBED: ("F32", [64, 32])}},
    ),
    "vqf.import.missing_tensor": (QWEN3_CONFIG, {"a.safetensors": {EMBED: ("F32", [64, 32])}}),
    "vqf.import.shape": (QWEN3_CONFIG, {"a.safetensors": {EMBED: ("F32", [32, 64])}}),
}


@pytest.mark.parametrize("rule", sorted(IMPORT_FAULTS))
def test_a_broken_qwen3_checkpoint_names_its_rule(tmp_path: Path, capsys, rule: str) -> None:
    config, shards = IMPORT_FAULTS[rule]
    folder = checkpoint(tmp_path / "hf", config, shards)
    out = tmp_path / "o.vqf"
    assert main(["import", str(folder), str(out), "--qtype", "q8_0"]) == exit_code(rule)
    assert f"{RULES[rule].error_class}: [{rule}]" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("rule", "config"),
    [
        ("qwen35.import.config", "{not json"),
        ("qwen35.import.unsupported", {"model_type": "qwen3_5_text", "num_experts": 4}),
    ],
)
def test_a_qwen35_config_the_importer_cannot_convert_names_its_rule(
    tmp_path: Path, capsys, rule: str, config: object
) -> None:
    folder = checkpoint(tmp_path / "hf", config, {})
    out = tmp_path / "o.ninfer"
    assert main(["import", str(folder), str(out), "--format", "bf16"]) == exit_code(rule)
    assert f"{RULES[rule].error_class}: [{rule}]" in capsys.readouterr().err
    assert not out.exists()
