"""F32 (qtype 0x01): row-major IEEE binary32 LE words (spec/vqf.md §f32)."""

from __future__ import annotations

import struct

import numpy as np

from weightfile.ref.codecs.vqf.common import (
    input_bits,
    require_mode,
    require_payload,
    validate_length,
    values_from_bits,
)
from weightfile.spec.errors import Violation

NAME = "f32"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Every value's binary32 bits, little-endian, in row-major order (spec/vqf.md §f32)."""
    require_mode(NAME, mode)
    return b"".join(struct.pack("<I", b) for b in input_bits(NAME, values, rows, cols))


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The f32 bit patterns as uint32 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    words = [w for (w,) in struct.iter_unpack("<I", payload)]
    return {"bits": np.array(words, dtype=np.uint32).reshape(rows, cols)}


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """The stored float32 values [rows, cols], bit for bit."""
    payload = require_payload(NAME, payload, rows, cols)
    return values_from_bits([w for (w,) in struct.iter_unpack("<I", payload)], rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Every f32 word is a value, so only shape and length can be wrong."""
    return validate_length(NAME, payload, rows, cols)
