"""Applying one operation to every token of a call, each with its `Site` (spec/numerics.md §1).

A profile may choose its rule by site (operation, layer, token t of T), so every per-token step
of a forward pass goes through `per_token`, which builds that site.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from weightfile.ref.numerics.kernels import Site

#: One token's activation vector: float32 scalars.
Vec = list[np.float32]


def per_token(layer: int | None, tokens: int) -> Callable[..., list[Vec]]:
    """each(op, fn, rows_a, rows_b, ...): fn(a_t, b_t, ..., Site) for every token t, in order."""

    def each(op: str, fn: Callable[..., Vec], *rows: list[Vec]) -> list[Vec]:
        return [fn(*vs, Site(op, layer, t, tokens)) for t, vs in enumerate(zip(*rows, strict=True))]

    return each
