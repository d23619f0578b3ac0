"""Q8 4x4 tiled (VLLM_Q8_8X8=0, no flag; qtype 0x02): Q8_0 blocks regrouped by 4 rows (vqf.md §5.6).

136 B per group block: the 4 row scales, then codes in 4-byte chunks, row m's code j at
8 + 16(j//4) + 4m + j%4; no XOR. Needs R % 4 == 0, C % 32 == 0. A file does not say it uses this
layout (§0 item 3): see registry.codec_for(q8_tiling="4x4").
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import q8_0, tiling
from weightfile.spec.errors import Violation

NAME = "q8_0_4x4"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """q8_0 quantisation of `mode`, then the q8_0_4x4 tiling."""
    return tiling.encode(NAME, q8_0, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as q8_0.decode_words gives them."""
    return q8_0.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return q8_0.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The q8_0 rules, reported with q8_0_4x4 rule ids and tiled byte offsets."""
    return tiling.validate(NAME, q8_0, payload, rows, cols)
