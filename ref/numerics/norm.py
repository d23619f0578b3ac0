"""RMSNorm (spec/numerics.md §rmsnorm)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .f32 import F32, ONE
from .reduce import sum_f32


def rms_inverse(x: Sequence[np.float32], eps: np.float32) -> np.float32:
    """spec/numerics.md §rmsnorm r = 1 / sqrt(ss / n + eps), ss the canonical sum of x_i*x_i; sqrt
    correctly rounded."""
    ss = sum_f32(v * v for v in x)
    mean = ss / F32(len(x))
    return ONE / np.sqrt(mean + eps)


def rmsnorm(x: Sequence[np.float32], weight: Sequence[np.float32], eps: np.float32) -> list:
    """spec/numerics.md §rmsnorm out_i = (x_i * r) * w_i, two roundings per element."""
    r = rms_inverse(x, eps)
    return [(v * r) * w for v, w in zip(x, weight, strict=True)]
