"""`convert --vocab-bin` writes the board's tokenizer file beside a VQF, and `run --tokenizer-mode
board` encodes a prompt with the engine's greedy longest match over it (spec/vqf.md §vocab-bin).

The checkpoint is a one-layer dense Qwen3 of vocabulary 256 whose tokenizer.json holds the 256
byte-level characters (id = byte): the stored bytes and the board encoding of a short prompt are
derived by hand from spec/vqf.md §vocab-bin-text and §vocab-bin-encode.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.ref.vqf.vocab_bin import read_vocab_bin

_STREAM = Path(__file__).resolve().parents[1] / "convert" / "test_convert_stream.py"
pytest.importorskip("ml_dtypes")
_spec = importlib.util.spec_from_file_location("convert_stream_helpers", _STREAM)
stream = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(stream)  # type: ignore[union-attr]


def byte_char(b: int) -> str:
    """GPT-2's byte-level character of byte b (spec/vqf.md §vocab-bin-text)."""
    if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
        return chr(b)
    if b <= 0x20:
        return chr(0x100 + b)
    return chr(0x143) if b == 0xAD else chr(0x121 + b - 0x7F)


def byte_tokenizer() -> str:
    """A real tokenizer.json (the `tokenizers` library's): byte-level BPE, the 256 byte
    characters as ids 0-255, no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {byte_char(b): b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok.to_str()


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    src = stream.write_checkpoint(tmp_path_factory.mktemp("hf") / "hf", vocab=256)
    (src / "tokenizer.json").write_text(byte_tokenizer())
    out = tmp_path_factory.mktemp("out") / "m.vqf"
    assert main(["convert", str(src), str(out), "--wmode", "q8", "--vocab-bin", "--quiet"]) == 0
    return out


def test_convert_writes_the_table_with_the_byte_markers(converted):
    table = read_vocab_bin(converted.parent / "vocab.bin").tokens
    assert len(table) == 256
    assert table[0x20] == b"\xc4\xa0" and table[0x0A] == b"\xc4\x8a"  # markers kept
    assert table[ord("a")] == b"a" and table[0xC3] == b"\xc3" and table[0xAD] == b"\xad"


def test_convert_refuses_an_existing_vocab_bin_without_force(converted, tmp_path):
    src = stream.write_checkpoint(tmp_path / "hf", vocab=256)
    (src / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}}))
    out = tmp_path / "m.vqf"
    (tmp_path / "vocab.bin").write_bytes(b"old")
    assert main(["convert", str(src), str(out), "--vocab-bin", "--quiet"]) == 2
    assert not out.exists() and (tmp_path / "vocab.bin").read_bytes() == b"old"


def test_run_board_mode_encodes_as_the_engine(converted, capsys):
    """'ab a': a, b, then the space is skipped and 'Ġa' is no token (only the 2-byte marker
    'Ġ' is, which is not longer than the marker), so a again: ids 97, 98, 97."""
    common = ["run", str(converted), "--max-tokens", "2", "--profile", "kestrel-board"]
    assert main([*common, "--prompt", "ab a", "--tokenizer-mode", "board"]) == 0
    by_text = capsys.readouterr().out
    assert main([*common, "--token-ids", "97,98,97"]) == 0
    assert by_text == capsys.readouterr().out and by_text.strip()
    bad = ["run", str(converted), "--prompt", "ab", "--tokenizer-mode", "board"]
    assert main(bad) == 2  # the canonical profile has no board tokenizer
    assert "--profile kestrel-board" in capsys.readouterr().err
