"""G256 with Q8 8x8 tiling (flags G256 | Q8_8X8, qtype 0x02; vqf.md §5.5, §5.6).

The G256 payload (one scale per 256 elements, zero tail blocks) with the 8x8 tiling applied
afterwards, as the writer does. Needs R % 8 == 0 and C % 32 == 0.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import g256, tiling
from weightfile.spec.errors import Violation

NAME = "g256_8x8"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """g256 quantisation of `mode`, then the g256_8x8 tiling."""
    return tiling.encode(NAME, g256, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as g256.decode_words gives them."""
    return g256.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return g256.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The g256 rules, reported with g256_8x8 rule ids and tiled byte offsets."""
    return tiling.validate(NAME, g256, payload, rows, cols)
