"""Heads: a token's [heads·head_dim] vector seen as `heads` vectors of head_dim.

Pure re-indexing, no arithmetic (the attention of spec/numerics.md §attention works per head)."""

from __future__ import annotations

from .tokens import Vec


def split_heads(v: Vec, head_dim: int) -> list[Vec]:
    """[heads*head_dim] -> [heads][head_dim]."""
    return [v[h * head_dim : (h + 1) * head_dim] for h in range(len(v) // head_dim)]


def join_heads(heads: list[Vec]) -> Vec:
    """[heads][dim] -> [heads*dim]."""
    return [x for head in heads for x in head]
