"""Mixture-of-experts routing and the expert combine (spec/models.md §qwen35-ffn,
§qwen3-moe-forward).

Routing: the profile's softmax over every expert's router logit; the top-k probabilities (ties:
the lower expert index first), renormalised by their sum in the canonical order
(spec/numerics.md §lanes8-tree). Combine: the chosen experts' outputs, each times its weight (one
rounding), added in ascending expert index onto zeros, as transformers' index_add does.

`routed_experts` is the whole routed half of a MoE FFN (router matvec, routing, SwiGLU experts,
combine); Qwen3-MoE (ref/qwen3_moe) is exactly it, Qwen3.5-MoE (ref/qwen35/ffn.py) adds its
shared expert to it. One routing function serves both families.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from weightfile.ref.numerics.f32 import ZERO
from weightfile.ref.numerics.kernels import Kernels
from weightfile.ref.numerics.matrix import Matrix

from .swiglu import SwigluWeights, swiglu_ffn
from .tokens import Vec


def top_k(probs: Vec, k: int) -> list[int]:
    """The k most probable experts (ties: lower index first), in ascending expert index."""
    ranked = sorted(range(len(probs)), key=lambda e: (-probs[e], e))
    return sorted(ranked[:k])


def route(kernels: Kernels, logits: Vec, k: int) -> list[tuple[int, np.float32]]:
    """(expert, weight) of the top-k experts, ascending expert index: softmax, top-k, each
    probability divided by the canonical sum of the chosen ones (spec/models.md §qwen35-ffn)."""
    return choose(kernels, kernels.softmax(logits), k)


def choose(kernels: Kernels, probs: Vec, k: int) -> list[tuple[int, np.float32]]:
    """`route` after its softmax: the top-k of the probabilities, each divided by the canonical
    sum of the chosen ones (spec/models.md §qwen35-ffn)."""
    chosen = top_k(probs, k)
    total = kernels.sum([probs[e] for e in chosen])
    return [(e, probs[e] / total) for e in chosen]


def combine(routes: list[tuple[int, np.float32]], expert: Callable[[int], Vec], width: int) -> Vec:
    """Σ weight_e · expert(e) over the routes in their order, from zeros: each product rounded,
    then each add (spec/models.md §qwen35-ffn)."""
    out: Vec = [ZERO] * width
    for e, weight in routes:
        y = expert(e)
        out = [acc + weight * v for acc, v in zip(out, y, strict=True)]
    return out


def routed_experts(
    kernels: Kernels,
    router: Matrix,
    experts: Sequence[SwigluWeights],
    k: int,
    n: Vec,
) -> tuple[Vec, list[tuple[int, np.float32]], Vec]:
    """(router logits [E], the routes (expert, weight) in ascending expert index, the weighted
    sum of the chosen experts' SwiGLU outputs [H]) for one token's normed vector n
    (spec/models.md §qwen35-ffn, §qwen3-moe-forward). Only the k chosen experts are computed."""
    logits = kernels.matvec(router, n)
    routes = route(kernels, logits, k)
    out = combine(routes, lambda e: swiglu_ffn(kernels, experts[e], n)[3], len(n))
    return logits, routes, out
