"""`raw_bytes_v1`: a resource's bytes exactly, with no prefix, terminator or charset
(spec/ninfer3.md §raw-bytes).

Resources have an encoding, not a format: the format argument is None. The shape is `(length,)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.codecs.ninfer3.checks import require_length, require_shape, require_values
from weightfile.spec.codecs.ninfer3.layouts import RAW_BYTES_V1
from weightfile.spec.codecs.ninfer3.registry import NO_ENCODER, VERBATIM, WORDS, rule
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = RAW_BYTES_V1


def encode(
    fmt_name: None, values: np.ndarray, shape: Sequence[int], *, encoder: str = VERBATIM
) -> bytes:
    """The uint8 values, verbatim."""
    shape = require_shape(LAYOUT, shape)
    if encoder != VERBATIM:
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for raw bytes")
    require_values(LAYOUT, values, shape, np.uint8)
    return bytes(values.tolist())


def encode_words(fmt_name: None, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """`bytes` (uint8, `(length,)`) verbatim."""
    shape = require_shape(LAYOUT, shape)
    data = np.asarray(words.get("bytes"))
    if data.shape != shape or data.dtype != np.uint8:
        raise InvalidError(rule(LAYOUT, WORDS), "bytes must be uint8 of the shape")
    return bytes(data.tolist())


def decode_words(fmt_name: None, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """`bytes`: the payload as uint8."""
    return {"bytes": decode(fmt_name, payload, shape)}


def decode(fmt_name: None, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """The payload as a uint8 array of `(length,)`."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    return np.array(list(payload), dtype=np.uint8)


def validate(fmt_name: None, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Any non-empty byte string of the stated length is valid."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    return []
