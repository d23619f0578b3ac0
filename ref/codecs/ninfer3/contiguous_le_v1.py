"""`contiguous_le_v1`: bf16 / fp32 / int32 words in C order, least-significant byte first
(spec/ninfer3.md §direct-formats, §contiguous).

Every word is valid, so `validate` only checks the shape and the length. Words are taken from and
given back as unsigned-integer views, so NaN payloads, quiet/signalling bits and signed zeros
round-trip unchanged (spec/ninfer3.md §direct-formats). int32 decodes to int32 values: widening to
float32 would round.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from math import prod

import numpy as np

from weightfile.ref.codecs.ninfer3.checks import require_length, require_shape, require_values
from weightfile.ref.codecs.ninfer3.scalars import bf16_rne_word
from weightfile.spec.codecs.ninfer3.layouts import CONTIGUOUS_LE_V1
from weightfile.spec.codecs.ninfer3.registry import CODECS, NO_ENCODER, WORDS, rule
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = CONTIGUOUS_LE_V1

#: struct code of one word and the NumPy dtype of the words handed out by `decode_words`.
WORD_CODE = {"bf16": "H", "fp32": "I", "int32": "i"}
WORD_DTYPE = {"bf16": np.uint16, "fp32": np.uint32, "int32": np.int32}
VALUE_DTYPE = {"bf16": np.float32, "fp32": np.float32, "int32": np.int32}


def pack_words(fmt_name: str, words: list[int]) -> bytes:
    """Words in C order, each little-endian (spec/ninfer3.md §contiguous)."""
    return struct.pack(f"<{len(words)}{WORD_CODE[fmt_name]}", *words)


def unpack_words(fmt_name: str, payload: bytes) -> list[int]:
    """The words of a payload whose length has been checked."""
    count = len(payload) // struct.calcsize(WORD_CODE[fmt_name])
    return list(struct.unpack(f"<{count}{WORD_CODE[fmt_name]}", payload))


def encode_value_words(fmt_name: str, values: np.ndarray) -> list[int]:
    """bf16: the RNE bit rule on each binary32 word; fp32 and int32: the words themselves."""
    if fmt_name == "bf16":
        return [bf16_rne_word(bits) for bits in values.reshape(-1).view(np.uint32).tolist()]
    return (
        values.reshape(-1).tolist()
        if fmt_name == "int32"
        else values.view(np.uint32).ravel().tolist()
    )


def encode(fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = "") -> bytes:
    """bf16 from float32 by RNE; fp32 from float32 and int32 from int32 exactly
    (spec/ninfer3.md §direct-formats)."""
    shape = require_shape(LAYOUT, shape)
    canonical = CODECS[(fmt_name, LAYOUT)].encoder
    if encoder not in ("", canonical):
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape, VALUE_DTYPE[fmt_name])  # conversions are never implicit
    return pack_words(fmt_name, encode_value_words(fmt_name, values))


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Pack `codes` (uint16 bf16 / uint32 fp32 / int32 words) of the logical shape."""
    shape = require_shape(LAYOUT, shape)
    codes = np.asarray(words.get("codes"))
    if codes.shape != shape or codes.dtype != WORD_DTYPE[fmt_name]:
        raise InvalidError(rule(LAYOUT, WORDS), "codes must match the shape and word type")
    return pack_words(fmt_name, codes.reshape(-1).tolist())


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """The words in the logical shape: uint16 (bf16), uint32 (fp32) or int32."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    words = unpack_words(fmt_name, payload)
    return {"codes": np.array(words, dtype=WORD_DTYPE[fmt_name]).reshape(shape)}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """bf16: binary32 word `w << 16`; fp32: the word itself; int32: the two's-complement value."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    words = unpack_words(fmt_name, payload)
    if fmt_name == "int32":
        return np.array(words, dtype=np.int32).reshape(shape)
    if fmt_name == "bf16":
        # spec/ninfer3.md §direct-formats: the value is exactly the binary32 word bf16 << 16
        words = [w << 16 for w in words]
    return np.array(words, dtype=np.uint32).view(np.float32).reshape(shape)


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every word of every direct format is valid: only shape and length can fail
    (spec/ninfer3.md §direct-formats)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    assert len(payload) == prod(shape) * struct.calcsize(WORD_CODE[fmt_name])
    return []
