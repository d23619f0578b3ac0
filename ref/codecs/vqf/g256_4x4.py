"""G256 with Q8 4x4 tiling (flag G256, VLLM_Q8_8X8=0; vqf.md §5.5, §5.6, §0 item 3).

§5.5 names only the 8x8 combination, but the writer's 4x4 fallback (§7.5) applies to G256 files too;
this layout is selected only by registry.codec_for(q8_tiling="4x4"). Needs R % 4 == 0, C % 32 == 0.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import g256, tiling
from weightfile.spec.errors import Violation

NAME = "g256_4x4"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """g256 quantisation of `mode`, then the g256_4x4 tiling."""
    return tiling.encode(NAME, g256, values, rows, cols, mode)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical (untiled) words, as g256.decode_words gives them."""
    return g256.decode_words(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] in plain row-major order."""
    return g256.decode(tiling.legacy_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The g256 rules, reported with g256_4x4 rule ids and tiled byte offsets."""
    return tiling.validate(NAME, g256, payload, rows, cols)
