"""Softmax (spec/numerics.md §softmax)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .reduce import max_f32, sum_f32


def softmax(scores: Sequence[np.float32], exp: Callable) -> list[np.float32]:
    """spec/numerics.md §softmax p_i = exp(s_i - m) / S: m the maximum, S the canonical sum, one
    division each."""
    m = max_f32(scores)
    e = [exp(s - m) for s in scores]
    total = sum_f32(e)
    return [v / total for v in e]
