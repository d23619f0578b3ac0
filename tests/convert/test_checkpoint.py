"""The one checkpoint reader: exact widening to float32, sizes checked before allocation, and
typed errors in the importer's own rule family (spec/vqf.md §arch-semantics, spec/ninfer3.md
§direct-formats)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from weightfile.convert.checkpoint import Checkpoint, chat_template, read_json
from weightfile.families.qwen3 import to_vqf as qwen3_vqf
from weightfile.families.qwen35 import to_ninfer as qwen35_ninfer
from weightfile.spec.errors import InvalidError, MalformedError, NotFoundError, UnsupportedError

QWEN35 = qwen35_ninfer.RULES
VQF = qwen3_vqf.RULES

# bf16 words by hand: 1.0 = 0x3F80, -2.5 = 0xC020, the smallest subnormal 0x0001 = 2^-133,
# -0.0 = 0x8000, +inf = 0x7F80
WORDS = np.array([0x3F80, 0xC020, 0x0001, 0x8000, 0x7F80, 0x0000], dtype=np.uint16)
VALUES = np.array([1.0, -2.5, 2.0**-133, -0.0, np.inf, 0.0], dtype=np.float32)


def hand_written(path: Path, header: dict, body: bytes) -> Path:
    """A safetensors file from its parts: u64 header length, JSON header, data."""
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)
    return path


def test_bf16_f16_f32_widen_exactly(tmp_path):
    f16 = np.array([[0.5, -65504.0], [2.0**-24, -0.0]], dtype=np.float16)
    f32 = np.array([1.1, -3.3e-39], dtype=np.float32)
    save_file(
        {"b": WORDS.view(ml_dtypes.bfloat16).reshape(2, 3), "h": f16, "f": f32},
        str(tmp_path / "model.safetensors"),
    )
    with Checkpoint(tmp_path, QWEN35) as ckpt:
        assert sorted(ckpt.names) == ["b", "f", "h"]
        assert ckpt.shape("b") == (2, 3)
        b = ckpt.tensor("b")
        assert b.dtype == np.float32 and b.shape == (2, 3)
        np.testing.assert_array_equal(b.reshape(-1).view(np.uint32), VALUES.view(np.uint32))
        want_h = f16.astype(np.float32)  # numpy's float16 widening is exact
        np.testing.assert_array_equal(ckpt.tensor("h").view(np.uint32), want_h.view(np.uint32))
        np.testing.assert_array_equal(ckpt.tensor("f").view(np.uint32), f32.view(np.uint32))


def test_every_bf16_word_widens_to_its_top_half(tmp_path):
    """All 65536 patterns, NaN payloads and signalling NaNs included: word << 16, bit for bit."""
    words = np.arange(1 << 16, dtype="<u2")
    hand_written(
        tmp_path / "w.safetensors",
        {"w": {"dtype": "BF16", "shape": [256, 256], "data_offsets": [0, 1 << 17]}},
        words.tobytes(),
    )
    with Checkpoint(tmp_path, VQF) as ckpt:
        got = ckpt.tensor("w").reshape(-1).view(np.uint32)
    np.testing.assert_array_equal(got, words.astype(np.uint32) << 16)


def test_hand_written_bf16_and_scalars(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    words = (values.view(np.uint32) >> 16).astype("<u2")
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
        "s": {"dtype": "F32", "shape": [], "data_offsets": [8, 12]},
    }
    hand_written(tmp_path / "b.safetensors", header, words.tobytes() + struct.pack("<f", 0.5))
    with Checkpoint(tmp_path, VQF) as ckpt:
        np.testing.assert_array_equal(ckpt["w"], values.reshape(2, 2))
        assert ckpt["s"].shape == () and ckpt["s"] == np.float32(0.5)
        assert "__metadata__" not in ckpt and len(ckpt) == 2 and set(ckpt) == {"w", "s"}


def test_reads_are_lazy_and_a_mapping(tmp_path):
    """A tensor is read when asked for; an unused tensor of another dtype is no error."""
    save_file(
        {"i": np.arange(4, dtype=np.int64), "f": np.ones(3, np.float32)},
        str(tmp_path / "a.safetensors"),
    )
    with Checkpoint(tmp_path, VQF) as ckpt:
        assert "f" in ckpt and "g" not in ckpt
        np.testing.assert_array_equal(ckpt["f"], np.ones(3, np.float32))
        with pytest.raises(KeyError):
            ckpt["g"]
        with pytest.raises(UnsupportedError) as info:
            ckpt["i"]
        assert info.value.rule == "vqf.import.dtype" and info.value.path == "i"
        with pytest.raises(UnsupportedError) as info:  # the VQF importer's up-front refusal
            ckpt.require_float_dtypes()
        assert info.value.rule == "vqf.import.dtype" and info.value.path == "i"
    save_file({"f": np.ones(3, np.float32)}, str(tmp_path / "a.safetensors"))
    with Checkpoint(tmp_path, VQF) as ckpt:
        ckpt.require_float_dtypes()  # the guard: every tensor is a float


def test_errors_are_typed(tmp_path):
    with pytest.raises(NotFoundError) as info:
        Checkpoint(tmp_path, QWEN35)
    assert info.value.rule == "qwen35.import.missing_file"
    save_file({"i": np.arange(4, dtype=np.int64)}, str(tmp_path / "a.safetensors"))
    with Checkpoint(tmp_path, QWEN35) as ckpt:
        with pytest.raises(UnsupportedError) as info:
            ckpt.tensor("i")
        assert info.value.rule == "qwen35.import.dtype"
        with pytest.raises(NotFoundError) as info:
            ckpt.tensor("absent")
        assert info.value.rule == "qwen35.import.missing_tensor"
    save_file({"i": np.zeros(2, dtype=np.float32)}, str(tmp_path / "b.safetensors"))
    with pytest.raises(InvalidError) as info:  # the same name in two shards
        Checkpoint(tmp_path, QWEN35)
    assert info.value.rule == "qwen35.import.duplicate"
    (tmp_path / "b.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    with pytest.raises(MalformedError) as info:
        Checkpoint(tmp_path, QWEN35)
    assert info.value.rule == "qwen35.import.safetensors" and info.value.path == "b.safetensors"


F32_4 = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}


@pytest.mark.parametrize(
    ("header", "body"),
    [
        (F32_4, b"\0" * 8),  # 8 of the 16 bytes
        (F32_4, b"\0" * 24),  # 8 bytes no entry covers
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, b"\0" * 16),
        ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),  # a gap
        # element counts whose product wraps 64 bits: no allocation is ever sized from them
        ({"w": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 4], "data_offsets": [0, 16]}},
         b"\0" * 16),
        ({"w": {"dtype": "BF16", "shape": [1 << 62, 4], "data_offsets": [0, 0]}}, b""),
        ({"w": {"dtype": "F32", "shape": [4]}}, b"\0" * 16),  # no data_offsets
        ({"w": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}}, b"\0" * 16),
    ],
    ids=["truncated", "trailing", "count", "gap", "wraps", "wraps-bf16", "no-offsets", "shape"],
)  # fmt: skip
def test_broken_headers_are_malformed(tmp_path, header, body):
    hand_written(tmp_path / "x.safetensors", header, body)
    with pytest.raises(MalformedError) as info:
        Checkpoint(tmp_path, VQF)
    assert info.value.rule == "vqf.import.safetensors" and info.value.path == "x.safetensors"


@pytest.mark.parametrize(
    "data",
    [b"", b"\x01\0", struct.pack("<Q", 1 << 40) + b"{}", struct.pack("<Q", 4) + b"[1]x"],
    ids=["empty", "short", "header-past-the-file", "not-an-object"],
)
def test_broken_framing_is_malformed(tmp_path, data):
    (tmp_path / "x.safetensors").write_bytes(data)
    with pytest.raises(MalformedError) as info:
        Checkpoint(tmp_path, VQF)
    assert info.value.rule == "vqf.import.safetensors" and info.value.offset == 0


def test_a_file_cut_after_opening_is_malformed_when_read(tmp_path):
    path = hand_written(tmp_path / "x.safetensors", F32_4, b"\0" * 16)
    with Checkpoint(tmp_path, VQF) as ckpt:
        with path.open("r+b") as f:
            f.truncate(path.stat().st_size - 4)
        with pytest.raises(MalformedError) as info:
            ckpt.tensor("w")
    assert info.value.rule == "vqf.import.safetensors"


def test_read_json(tmp_path):
    (tmp_path / "config.json").write_text("[1]")
    with pytest.raises(InvalidError) as info:
        read_json(tmp_path, "config.json", QWEN35)
    assert info.value.rule == "qwen35.import.config"
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(InvalidError) as info:
        read_json(tmp_path, "config.json", VQF)
    assert info.value.rule == "vqf.import.config"
    with pytest.raises(NotFoundError) as info:
        read_json(tmp_path, "absent.json", VQF)
    assert info.value.rule == "vqf.import.missing_file"
    (tmp_path / "config.json").write_text('{"a": 1}')
    assert read_json(tmp_path, "config.json", VQF) == {"a": 1}


def test_chat_template(tmp_path):
    assert chat_template(tmp_path, VQF) is None
    (tmp_path / "tokenizer_config.json").write_text("{")
    assert chat_template(tmp_path, VQF) is None  # a broken config has no template
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "T"}')
    assert chat_template(tmp_path, VQF) == "T"
    (tmp_path / "chat_template.jinja").write_text("J")
    assert chat_template(tmp_path, VQF) == "J"  # the .jinja file wins
