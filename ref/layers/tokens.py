"""Applying one operation to every token of a call (spec/numerics.md §profiles).

The canonical rules do not depend on the token's place in its call, which is what makes the
forward pass batch invariant (spec/numerics.md §batch-invariance): each token's vector goes through
the same function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: One token's activation vector: float32 scalars.
Vec = list[np.float32]


def each(fn: Callable[..., Vec], *rows: list[Vec]) -> list[Vec]:
    """fn(a_t, b_t, ...) for every token t of rows_a, rows_b, ..., in order."""
    return [fn(*vs) for vs in zip(*rows, strict=True)]
