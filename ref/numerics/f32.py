"""binary32 helpers: constants from bit patterns, f16 widening (spec/numerics.md §arithmetic).

Python floats are binary64, so every value here is a NumPy float32 scalar or a float32 array:
each +, -, *, / on them is one IEEE binary32 operation rounded to nearest even.
"""

from __future__ import annotations

from functools import cache

import numpy as np

F32 = np.float32
ZERO = F32(0.0)
ONE = F32(1.0)


def f32_from_bits(bits: int) -> np.float32:
    """The binary32 value with this bit pattern (constants are stated as bits,
    spec/numerics.md §arithmetic)."""
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def f32_bits(value: np.float32) -> int:
    """The bit pattern of a binary32 value."""
    return int(np.array([value], dtype=np.float32).view(np.uint32)[0])


@cache  # 65536 possible inputs; caching only avoids rebuilding the same scalar
def f16_bits_to_f32(bits: int) -> np.float32:
    """Widen an IEEE binary16 bit pattern to binary32; exact for every value
    (spec/numerics.md §quantized-matmul)."""
    return F32(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def pow2(k: np.ndarray) -> np.ndarray:
    """2**k as float32 for integer-valued float32 k in [-126, 127], built from exponent bits."""
    biased = (np.asarray(k).astype(np.int32) + 127) << 23
    return biased.astype(np.int32).view(np.float32)
