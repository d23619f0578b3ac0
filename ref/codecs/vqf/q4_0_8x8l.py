"""Q4_8X8L (qtype 0x04, x8_* tensors): Q4_0 blocks by 8 rows, 144 B groups (vqf.md §5.8).

The 8 row scales, then 16 chunks of 8 legacy qs bytes, every byte XOR 0x88: row m's legacy byte k
at 16 + 64(k//8) + 8m + k%8 (ggml block_q4_0x8, "Q4_0_8_8"). Needs R % 8 == 0, C % 32 == 0. This is
the layout of legacy Q4_0 input; §0 item 4 notes that writers which also set Q4_4X4 shuffle the
already-4x4 bytes instead, which this codec does not model.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import q4_0, tiling
from weightfile.spec.errors import Violation

NAME = "q4_0_8x8l"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """q4_0 quantisation of `mode`, then the q4_0_8x8l tiling."""
    return tiling.encode(NAME, q4_0, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as q4_0.decode_words gives them."""
    return q4_0.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return q4_0.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The q4_0 rules, reported with q4_0_8x8l rule ids and tiled byte offsets."""
    return tiling.validate(NAME, q4_0, payload, rows, cols)
