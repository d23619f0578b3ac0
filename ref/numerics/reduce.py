"""The canonical summation order: 8 lanes, then a fixed halving tree (spec/numerics.md
§lanes8-tree).

Element i of a sum goes to lane i mod 8; each lane adds its elements in ascending i, starting
from +0.0. The lanes are then combined as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)): first the
upper four lanes onto the lower four, then the upper two of those onto the lower two, then the
last pair -- the reduction an 8-wide AVX register or a pair of 4-wide NEON registers performs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from weightfile.spec.numerics.constants import SUM_LANES

from .f32 import ZERO


def lane_partials(terms: Iterable[np.float32]) -> list[np.float32]:
    """spec/numerics.md §lanes Lane j holds the ascending-order sum of the terms with index = j (mod
    8)."""
    lanes = [ZERO] * SUM_LANES
    for i, term in enumerate(terms):
        lanes[i % SUM_LANES] = lanes[i % SUM_LANES] + term
    return lanes


def combine_lanes(lanes: Sequence[np.float32]) -> np.float32:
    """spec/numerics.md §combining-tree The fixed tree: halve the lane count by adding lane j +
    width/2 onto lane j."""
    level = list(lanes)
    while len(level) > 1:
        half = len(level) // 2
        level = [level[j] + level[j + half] for j in range(half)]
    return level[0]


def sum_f32(terms: Iterable[np.float32]) -> np.float32:
    """spec/numerics.md §lanes8-tree The canonical sum of float32 terms."""
    return combine_lanes(lane_partials(terms))


def dot(a: Sequence[np.float32], b: Sequence[np.float32]) -> np.float32:
    """spec/numerics.md §dot Dot product: products rounded one by one (no FMA), summed in the
    canonical order."""
    if len(a) != len(b):
        raise ValueError(f"dot of lengths {len(a)} and {len(b)}")
    return sum_f32(x * y for x, y in zip(a, b, strict=True))


def max_f32(values: Iterable[np.float32]) -> np.float32:
    """spec/numerics.md §softmax Maximum, NaN if any value is NaN (order does not matter for
    max)."""
    best = None
    for v in values:
        if best is None or v > best or v != v:
            best = v
            if v != v:
                return v
    if best is None:
        raise ValueError("max of an empty sequence")
    return best
