"""The importer's lazy safetensors reader: exact widening to float32, typed errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from weightfile.ref.ninfer3.import_safetensors import Checkpoint, read_json
from weightfile.spec.errors import InvalidError, MalformedError, NotFoundError, UnsupportedError

# bf16 words by hand: 1.0 = 0x3F80, -2.5 = 0xC020, the smallest subnormal 0x0001 = 2^-133,
# -0.0 = 0x8000, +inf = 0x7F80
WORDS = np.array([0x3F80, 0xC020, 0x0001, 0x8000, 0x7F80, 0x0000], dtype=np.uint16)
VALUES = np.array([1.0, -2.5, 2.0**-133, -0.0, np.inf, 0.0], dtype=np.float32)


def test_bf16_f16_f32_widen_exactly(tmp_path):
    f16 = np.array([[0.5, -65504.0], [2.0**-24, -0.0]], dtype=np.float16)
    f32 = np.array([1.1, -3.3e-39], dtype=np.float32)
    save_file(
        {"b": WORDS.view(ml_dtypes.bfloat16).reshape(2, 3), "h": f16, "f": f32},
        str(tmp_path / "model.safetensors"),
    )
    with Checkpoint(tmp_path) as ckpt:
        assert sorted(ckpt.names) == ["b", "f", "h"]
        assert ckpt.shape("b") == (2, 3)
        b = ckpt.tensor("b")
        assert b.dtype == np.float32 and b.shape == (2, 3)
        np.testing.assert_array_equal(b.reshape(-1).view(np.uint32), VALUES.view(np.uint32))
        want_h = f16.astype(np.float32)  # numpy's float16 widening is exact
        np.testing.assert_array_equal(ckpt.tensor("h").view(np.uint32), want_h.view(np.uint32))
        np.testing.assert_array_equal(ckpt.tensor("f").view(np.uint32), f32.view(np.uint32))


def test_errors_are_typed(tmp_path):
    with pytest.raises(NotFoundError):
        Checkpoint(tmp_path)
    save_file({"i": np.arange(4, dtype=np.int64)}, str(tmp_path / "a.safetensors"))
    with Checkpoint(tmp_path) as ckpt:
        with pytest.raises(UnsupportedError) as info:
            ckpt.tensor("i")
        assert info.value.rule == "qwen35.import.dtype"
        with pytest.raises(NotFoundError) as info:
            ckpt.tensor("absent")
        assert info.value.rule == "qwen35.import.missing_tensor"
    save_file({"i": np.zeros(2, dtype=np.float32)}, str(tmp_path / "b.safetensors"))
    with pytest.raises(InvalidError) as info:  # the same name in two shards
        Checkpoint(tmp_path)
    assert info.value.rule == "qwen35.import.duplicate"
    (tmp_path / "b.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    with pytest.raises(MalformedError) as info:
        Checkpoint(tmp_path)
    assert info.value.rule == "qwen35.import.safetensors" and info.value.path == "b.safetensors"


def test_read_json(tmp_path):
    (tmp_path / "config.json").write_text("[1]")
    with pytest.raises(InvalidError):
        read_json(tmp_path, "config.json")
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(InvalidError):
        read_json(tmp_path, "config.json")
    with pytest.raises(NotFoundError):
        read_json(tmp_path, "absent.json")
