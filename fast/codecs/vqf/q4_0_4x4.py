"""Q4 4x4 (flag Q4_4X4, qtype 0x03): Q4_0 blocks regrouped by 4 rows, 72 B per group (vqf.md §5.7).

The 4 row scales, then the legacy qs bytes in 4-byte chunks, every byte XOR 0x88: row m's legacy
byte k at 8 + 16(k//4) + 4m + k%4 (ggml block_q4_0x4, "Q4_0_4_4"). Needs R % 4 == 0, C % 32 == 0.

Vectorised; must equal ref/codecs/vqf/q4_0_4x4.py bit for bit.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf import q4_0, tiling
from weightfile.spec.errors import Violation

NAME = "q4_0_4x4"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """q4_0 quantisation of `mode`, then the q4_0_4x4 tiling."""
    return tiling.encode(NAME, q4_0, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as q4_0.decode_words gives them."""
    return q4_0.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return q4_0.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The q4_0 rules, reported with q4_0_4x4 rule ids and tiled byte offsets."""
    return tiling.validate(NAME, q4_0, payload, rows, cols)
