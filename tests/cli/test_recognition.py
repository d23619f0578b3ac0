"""What a file or folder is, said before anything else (issue 34 item 7): a Qwen3.5 checkpoint
given a `.vqf` destination, files that are neither VQF nor `.ninfer` handed to inspect/verify, and
a short text file named `.vqf`."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

import weightfile
from weightfile.cli import main
from weightfile.commands._common import EXIT_USAGE, EXIT_VIOLATIONS


def _png() -> bytes:
    """A 1x1 grey PNG, chunk by chunk (PNG spec: signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0\x80"))
            + chunk(b"IEND", b""))  # fmt: skip


def _gguf() -> bytes:
    """A GGUF v3 header with no tensors and no metadata (magic, version, two u64 counts)."""
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 0)


def _safetensors() -> bytes:
    """One f32 tensor as the safetensors format lays it out: u64 header length, JSON, data."""
    head = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    return struct.pack("<Q", len(head)) + head + np.zeros(2, "<f4").tobytes()


def _npy(tmp_path) -> bytes:
    np.save(tmp_path / "a.npy", np.arange(3, dtype=np.float32))
    return (tmp_path / "a.npy").read_bytes()


FOREIGN = [
    ("model.gguf", _gguf, "GGUF", "weightfile convert"),
    ("picture.png", _png, "PNG image", "--image"),
    ("model.safetensors", _safetensors, "safetensors", "weightfile convert"),
    ("values.npy", None, "NumPy .npy", "weightfile diff"),
]


@pytest.mark.parametrize("command", ["inspect", "verify"])
@pytest.mark.parametrize(("name", "make", "what", "reader"), FOREIGN)
def test_a_foreign_file_is_named_with_the_command_that_reads_it(
    tmp_path, capsys, command, name, make, what, reader
):
    path = tmp_path / name
    path.write_bytes(_npy(tmp_path) if make is None else make())
    assert main([command, str(path)]) == EXIT_VIOLATIONS
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "Traceback" not in said and "unknown file format" not in said
    assert "[format.magic]" in said and what in said and reader in said


def test_a_foreign_file_named_vqf_is_still_named_by_its_magic(tmp_path):
    path = tmp_path / "mislabelled.vqf"
    path.write_bytes(_gguf())
    [v] = weightfile.validate(path)
    assert v.rule == "format.magic" and "GGUF" in str(v)


def test_a_six_byte_text_file_named_vqf_has_a_bad_magic_not_missing_bytes(tmp_path, capsys):
    """Magic first: "truncated, 506 bytes missing" would send the user looking for bytes."""
    path = tmp_path / "notes.vqf"
    path.write_bytes(b"hello\n")
    assert main(["verify", str(path)]) == EXIT_VIOLATIONS
    out = capsys.readouterr().out
    rule = "vqf.header.magic"
    assert f"[{rule}]" in out and "not a VQF" in out and "missing" not in out
    assert [v.rule for v in weightfile.validate_vqf(path)] == [rule]


@pytest.mark.parametrize("head", [b"F", b"FQF", b"FQFW" + b"\0" * 100])
def test_a_short_file_that_starts_like_a_vqf_is_truncated(tmp_path, head):
    """The magic's prefix (or the whole magic) in a short file: a truncated VQF."""
    path = tmp_path / "cut.vqf"
    path.write_bytes(head)
    assert [v.rule for v in weightfile.validate_vqf(path)] == ["vqf.file.too_small"]


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "qwen3_5_text"},
        {"model_type": "qwen3_5_moe_text"},
        {"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text"}},
    ],
)
@pytest.mark.parametrize("dst", ["out.vqf", "out.gguf"])
def test_a_qwen35_checkpoint_converts_to_ninfer_only(tmp_path, capsys, config, dst):
    folder = tmp_path / "qwen35"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert main(["convert", str(folder), str(tmp_path / dst)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    rule = "vqf.import.target"
    assert f"[{rule}]" in err and "Qwen3.5" in err and ".ninfer" in err
    assert "q_norm" not in err and not (tmp_path / dst).exists()
