"""Causal attention of one query head over its cached positions (spec/numerics.md §attention)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .f32 import ONE, ZERO

Vec = Sequence[np.float32]


def attention_scale(head_dim: int) -> np.float32:
    """spec/numerics.md §attention step 1: 1 / sqrt(head_dim), a correctly rounded sqrt and one
    division."""
    return ONE / np.sqrt(np.float32(head_dim))


def attend_head(
    q: Vec,
    keys: Sequence[Vec],
    values: Sequence[Vec],
    dot: Callable[[Vec, Vec], np.float32],
    softmax: Callable[[Vec], list[np.float32]],
) -> list[np.float32]:
    """spec/numerics.md §attention steps 2-4: scores over positions 0..p ascending, softmax, then o
    += p_j * v_j in order."""
    scale = attention_scale(len(q))
    scores = [dot(q, k) * scale for k in keys]
    probs = softmax(scores)
    out = [ZERO] * len(q)
    for p, v in zip(probs, values, strict=True):
        out = [o + p * x for o, x in zip(out, v, strict=True)]
    return out
