"""Vectorised `contiguous_le_v1` (spec/ninfer3.md §contiguous); equals
`ref.codecs.ninfer3.contiguous_le_v1`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.codecs.ninfer3.checks import require_length, require_shape, require_values
from weightfile.ref.codecs.ninfer3.contiguous_le_v1 import VALUE_DTYPE, WORD_DTYPE
from weightfile.spec.codecs.ninfer3.layouts import CONTIGUOUS_LE_V1
from weightfile.spec.codecs.ninfer3.registry import CODECS, NO_ENCODER, WORDS, rule
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = CONTIGUOUS_LE_V1
__all__ = ["bf16_rne", "decode", "decode_words", "encode", "encode_words", "validate"]


def bf16_rne(values: np.ndarray) -> np.ndarray:
    """uint16 BF16 words of float32 values by the spec/ninfer3.md §fp8-row-maxabs bit rule; NaN ->
    quiet NaN, sign kept."""
    bits = values.view(np.uint32)
    # No carry leaves 32 bits for a non-NaN word (the largest, -inf, is 0xFF800000); NaN words
    # may wrap around, and are replaced below.
    rounded = bits >> np.uint32(16)
    rounded &= np.uint32(1)
    rounded += bits
    rounded += np.uint32(0x7FFF)
    rounded >>= np.uint32(16)
    words = rounded.astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        quiet = ((bits >> np.uint32(16)) & np.uint32(0x8000) | np.uint32(0x7FC0)).astype(np.uint16)
        words = np.where(nan, quiet, words)
    return words


def encode(fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = "") -> bytes:
    """bf16 from float32 by RNE; fp32 and int32 words exactly (ref.encode)."""
    shape = require_shape(LAYOUT, shape)
    canonical = CODECS[(fmt_name, LAYOUT)].encoder
    if encoder not in ("", canonical):
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape, VALUE_DTYPE[fmt_name])
    words = bf16_rne(values) if fmt_name == "bf16" else values
    return np.ascontiguousarray(words).astype(words.dtype.newbyteorder("<")).tobytes()


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Pack `codes` of the logical shape (ref.encode_words)."""
    shape = require_shape(LAYOUT, shape)
    codes = np.asarray(words.get("codes"))
    if codes.shape != shape or codes.dtype != WORD_DTYPE[fmt_name]:
        raise InvalidError(rule(LAYOUT, WORDS), "codes must match the shape and word type")
    return np.ascontiguousarray(codes).astype(codes.dtype.newbyteorder("<")).tobytes()


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """The words in the logical shape (ref.decode_words)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    le = np.dtype(WORD_DTYPE[fmt_name]).newbyteorder("<")
    return {"codes": np.frombuffer(payload, dtype=le).astype(WORD_DTYPE[fmt_name]).reshape(shape)}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """bf16 widened by `<< 16`, fp32 words viewed as float32, int32 values (ref.decode)."""
    words = decode_words(fmt_name, payload, shape)["codes"]
    if fmt_name == "int32":
        return words
    if fmt_name == "bf16":
        words = np.asarray(words.astype(np.uint32) << np.uint32(16))  # rank 0 stays an array
    return words.view(np.float32)


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Only shape and length can fail (ref.validate)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    return []
