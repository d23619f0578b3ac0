"""Q8 8x8 tiled (flag Q8_8X8, qtype 0x02): Q8_0 blocks by 8 rows, 272 B groups (vqf.md §5.6).

Scales of the 8 rows first, then codes in 4-byte chunks: row m's code j at 16 + 32(j//4) + 4m + j%4.
Equivalent to ggml's block_q8_0x4 layout extended to 8 rows; no XOR. Needs R % 8 == 0, C % 32 == 0.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import q8_0, tiling
from weightfile.spec.errors import Violation

NAME = "q8_0_8x8"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """q8_0 quantisation of `mode`, then the q8_0_8x8 tiling."""
    return tiling.encode(NAME, q8_0, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as q8_0.decode_words gives them."""
    return q8_0.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return q8_0.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The q8_0 rules, reported with q8_0_8x8 rule ids and tiled byte offsets."""
    return tiling.validate(NAME, q8_0, payload, rows, cols)
