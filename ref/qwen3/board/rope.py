"""RoPE as the board computes it (spec/numerics.md §board-rope): a powf frequency table, and cosf /
sinf of the float32 angle on every call, rotate-half pairs over the whole head."""

from __future__ import annotations

from functools import cache

import numpy as np

from .libm import cosf, powf, sinf

F32 = np.float32


@cache
def inv_freq(theta: float, head_dim: int) -> tuple[np.float32, ...]:
    """spec/numerics.md §board-rope f_j = fl(1 / powf(theta, fl(j / half))), j < half =
    head_dim/2."""
    half = head_dim // 2
    return tuple(F32(1.0) / powf(F32(theta), F32(j) / F32(half)) for j in range(half))


def cos_sin(pos: int, theta: float, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-rope cosf and sinf of angle_j = fl(float(pos) · f_j). [half] each"""
    angles = [F32(pos) * f for f in inv_freq(theta, head_dim)]
    return np.array([cosf(a) for a in angles], F32), np.array([sinf(a) for a in angles], F32)


def rope_heads(x: np.ndarray, pos: int, theta: float, head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-rope every head: x'_j = fl(fl(x_j·c) - fl(x_{j+h}·s)),
    x'_{j+h} = fl(fl(x_{j+h}·c) + fl(x_j·s))."""
    c, s = cos_sin(pos, theta, head_dim)
    h = head_dim // 2
    heads = x.astype(F32).reshape(-1, head_dim)
    a, b = heads[:, :h], heads[:, h:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=1).reshape(-1)
