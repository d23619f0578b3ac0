"""The Hadamard rotation of a Use's input (spec/numerics.md §hadamard).

`z = H(x)`, per 1024-block: the signs first (exact), ten butterfly stages of (a ⊕ b, a ⊖ b) at
strides 1, 2, 4, …, 512 in that order, then the exact scale 2^−5. Readable: one scalar binary32
operation at a time, every stage a fresh list, so the order of spec/numerics.md §hadamard is the
order of the code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.spec.numerics.constants import HADAMARD_BLOCK, HADAMARD_SCALE_BITS

from .f32 import F32, f32_from_bits

SCALE = f32_from_bits(HADAMARD_SCALE_BITS)  # 1/32, exact (spec/numerics.md §hadamard step 3)


def butterfly_stage(y: Sequence[np.float32], h: int) -> list[np.float32]:
    """One stage (spec/numerics.md §hadamard step 2): each pair (i, i + h) with bit h of i clear
    becomes (a ⊕ b, a ⊖ b), both read from the previous stage."""
    out = list(y)
    for i in range(len(y)):
        if i & h == 0:
            a, b = y[i], y[i + h]
            out[i] = a + b
            out[i + h] = a - b
    return out


def hadamard_block(x: Sequence[np.float32], signs: Sequence[int]) -> list[np.float32]:
    """H of one 1024-block: signs, the ten stages (stride 1 first), the scale."""
    if len(x) != HADAMARD_BLOCK or len(signs) != HADAMARD_BLOCK:
        raise ValueError(f"a Hadamard block has {HADAMARD_BLOCK} elements and signs")
    with np.errstate(over="ignore", invalid="ignore"):  # ±inf and NaN as IEEE gives them
        y = [F32(v) * F32(s) for v, s in zip(x, signs, strict=True)]  # ×(±1): exact
        h = 1
        while h < HADAMARD_BLOCK:
            y = butterfly_stage(y, h)
            h *= 2
        return [v * SCALE for v in y]


def hadamard(x: Sequence[np.float32], signs: Sequence[int]) -> list[np.float32]:
    """H(x) for one activation vector of K elements, K a multiple of 1024; `signs` are K values
    +1 / −1 (spec/numerics.md §hadamard)."""
    if len(x) != len(signs) or len(x) % HADAMARD_BLOCK:
        raise ValueError(
            f"Hadamard of {len(x)} elements with {len(signs)} signs: both must be one multiple "
            f"of {HADAMARD_BLOCK}"
        )
    out: list[np.float32] = []
    for b in range(0, len(x), HADAMARD_BLOCK):
        out += hadamard_block(x[b : b + HADAMARD_BLOCK], signs[b : b + HADAMARD_BLOCK])
    return out
