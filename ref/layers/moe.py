"""Mixture-of-experts routing and the expert combine (spec/numerics.md §18.3).

Routing: the profile's softmax over every expert's router logit; the top-k probabilities (ties:
the lower expert index first), renormalised by their sum in the canonical order
(spec/numerics.md §3). Combine: the chosen experts' outputs, each times its weight (one
rounding), added in ascending expert index onto zeros, as transformers' index_add does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from weightfile.ref.numerics.f32 import ZERO
from weightfile.ref.numerics.kernels import Kernels

from .tokens import Vec


def top_k(probs: Vec, k: int) -> list[int]:
    """The k most probable experts (ties: lower index first), in ascending expert index."""
    ranked = sorted(range(len(probs)), key=lambda e: (-probs[e], e))
    return sorted(ranked[:k])


def route(kernels: Kernels, logits: Vec, k: int) -> list[tuple[int, np.float32]]:
    """(expert, weight) of the top-k experts, ascending expert index: softmax, top-k, each
    probability divided by the canonical sum of the chosen ones (spec/numerics.md §18.3)."""
    probs = kernels.softmax(logits)
    chosen = top_k(probs, k)
    total = kernels.sum([probs[e] for e in chosen])
    return [(e, probs[e] / total) for e in chosen]


def combine(routes: list[tuple[int, np.float32]], expert: Callable[[int], Vec], width: int) -> Vec:
    """Σ weight_e · expert(e) over the routes in their order, from zeros: each product rounded,
    then each add (spec/numerics.md §18.3)."""
    out: Vec = [ZERO] * width
    for e, weight in routes:
        y = expert(e)
        out = [acc + weight * v for acc, v in zip(out, y, strict=True)]
    return out
