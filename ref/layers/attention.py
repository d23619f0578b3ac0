"""Causal grouped-query attention over per-sequence K/V caches (spec/numerics.md §attention).

A token's query heads each attend over positions 0 .. its own of its sequence's cache; query
head h reads kv head h // (heads / kv_heads). The cache stores K after whatever the family
applies before it (norm, RoPE); one cache per sequence, its tokens in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weightfile.ref.numerics.kernels import Kernels

from .heads import split_heads
from .tokens import Vec

#: attend(q, keys, values) -> the attention output of one token [heads*head_dim].
Attend = Callable[[Vec, list[list[Vec]], list[list[Vec]]], Vec]


def attend(
    kernels: Kernels,
    q: Vec,
    keys: list[list[Vec]],
    values: list[list[Vec]],
    head_dim: int,
    group_size: int,
) -> Vec:
    """spec/numerics.md §attention One token's GQA: query head h over kv head h // group_size, for
    the cached positions given ([pos][kv_head][head_dim])."""
    out: Vec = []
    for h, qh in enumerate(split_heads(q, head_dim)):
        g = h // group_size  # query head h reads kv head h // (heads / kv_heads)
        out += kernels.attend(qh, [k[g] for k in keys], [v[g] for v in values])
    return out


def causal_attention(
    layer: int,
    q: list[Vec],
    k: list[Vec],
    v: list[Vec],
    caches: list[Any],
    head_dim: int,
    attend: Attend,
) -> list[Vec]:
    """Append each token's K/V heads to its own cache, then attend each token over positions
    0 .. its own of that cache (causal); caches[t] is token t's, a sequence's tokens in order."""
    ends = []  # token t attends to positions 0 .. ends[t]-1 of its own cache
    for t, cache in enumerate(caches):
        cache.keys[layer].append(split_heads(k[t], head_dim))
        cache.values[layer].append(split_heads(v[t], head_dim))
        ends.append(len(cache.keys[layer]))
    return [
        attend(
            q[t],
            c.keys[layer][: ends[t]],
            c.values[layer][: ends[t]],
        )
        for t, c in enumerate(caches)
    ]
