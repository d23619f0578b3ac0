"""The rows of the rule table no other test raised (spec/rules.py), each broken once through a
public entry point: the API, the codec registry or the command line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from strategies.vqf import patch_bytes, patch_header
from tokenizers import Tokenizer, models

import weightfile
from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.errors import NotFoundError, UnsupportedError
from weightfile.spec.vqf.header import field_offset
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.tensor import VQFTensor


@pytest.fixture
def example(tmp_path: Path) -> Path:
    return Path(shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf"))


def run(model: Path, *extra: str) -> list[str]:
    return ["run", str(model), "--max-tokens", "1", "--engine", "ref", *extra]


def test_a_name_not_in_the_directory_is_not_found() -> None:
    """spec/vqf.md §9 step 12: tensors are found by their exact name."""
    with weightfile.open_vqf(EXAMPLE_PATH) as vqf, pytest.raises(NotFoundError) as info:
        vqf.entry("q5_q")
    assert info.value.rule == "vqf.directory.name" and info.value.path == "q5_q"


def test_a_qtype_with_no_encoding_has_no_codec() -> None:
    """spec/vqf.md §3.2: the qtype registry is closed."""
    with pytest.raises(UnsupportedError) as info:
        codec_for(0x7F, 0, "q8_q")
    assert info.value.rule == "vqf.codec.qtype"


def test_binding_refuses_a_tensor_of_the_wrong_qtype(example: Path, capsys) -> None:
    """spec/vqf.md §7.1: final_norm is F32; an F16 one is not bound."""
    with weightfile.open_vqf(example) as vqf:
        at = vqf.entry("final_norm").entry_offset + field_offset(VQFTensor, "qtype")
    patch_bytes(example, at, int(QType.F16).to_bytes(4, "little"))
    assert main(run(example, "--token-ids", "1")) == 1
    err = capsys.readouterr().err
    assert "InvalidError" in err and "vqf.bind.qtype" in err and "final_norm" in err


def test_binding_refuses_a_qwen3_without_qk_norms(example: Path, capsys) -> None:
    """spec/vqf.md §8: the Qwen3 decoder needs has_q_norm."""
    patch_header(example, lambda h: h["arch"].update({"has_q_norm": 0}))
    assert main(run(example, "--token-ids", "1")) == 1
    err = capsys.readouterr().err
    assert "UnsupportedError" in err and "vqf.bind.unsupported" in err


def test_a_prompt_that_encodes_to_no_tokens_is_refused(example: Path, tmp_path: Path, capsys):
    """spec/numerics.md §10: the forward pass needs at least one token."""
    tokenizer = tmp_path / "tokenizer.json"
    Tokenizer(models.WordLevel({"a": 1, "[UNK]": 0}, unk_token="[UNK]")).save(str(tokenizer))
    assert main(run(example, "--prompt", "", "--tokenizer", str(tokenizer))) == 1
    err = capsys.readouterr().err
    assert "InvalidError" in err and "frontend.prompt" in err and "no tokens" in err
