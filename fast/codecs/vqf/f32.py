"""Vectorised F32 codec (spec/vqf.md §f32); must equal ref/codecs/vqf/f32.py bit for bit."""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf.common import input_array, require_payload
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.errors import Violation

NAME = "f32"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Every value's binary32 bits, little-endian, in row-major order (spec/vqf.md §f32)."""
    require_mode(NAME, mode)
    return input_array(NAME, values, rows, cols).astype("<f4").tobytes()


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The f32 bit patterns as uint32 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    return {"bits": np.frombuffer(payload, dtype="<u4").astype(np.uint32).reshape(rows, cols)}


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """The stored float32 values [rows, cols], bit for bit."""
    payload = require_payload(NAME, payload, rows, cols)
    words = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
    return words.view(np.float32).reshape(rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Every f32 word is a value, so only shape and length can be wrong."""
    return validate_length(NAME, payload, rows, cols)
