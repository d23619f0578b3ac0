"""A batch of requests as one layer-major pass (spec/numerics.md §batch-invariance).

Each request is (token ids, its own cache, position ids or None); the pass runs over all tokens
of all requests in order, and its output rows are split back per request. A text token at
position p has the MRoPE ids (p, p, p) (spec/numerics.md §mrope-positions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .tokens import Vec
from .trace import as_rows

PositionIds = Sequence[Sequence[int]]  # [T][3]: MRoPE (t, h, w) ids; text tokens have t = h = w


def text_position_ids(start: int, count: int) -> list[tuple[int, int, int]]:
    """spec/numerics.md §mrope-positions: a text token at position p has MRoPE ids (p, p, p)."""
    return [(p, p, p) for p in range(start, start + count)]


def gather_requests(
    requests: Sequence[tuple[Sequence[int], Any, PositionIds | None]],
) -> tuple[list[int], list[Sequence[int]], list[Any]]:
    """A batch flattened to (token ids, position ids, each token's cache), requests in order.

    Each request needs its own cache (anything with a `length`); position_ids default to text
    positions continuing that cache (MRoPE ids p, p, p).
    """
    if len({id(c) for _, c, _ in requests}) != len(requests):
        raise ValueError("each request of a batch needs its own cache")
    tokens: list[int] = []
    pos: list[Sequence[int]] = []
    caches: list[Any] = []
    for token_ids, cache, position_ids in requests:
        if not token_ids:
            raise ValueError("forward needs at least one token")
        p = position_ids or text_position_ids(cache.length, len(token_ids))
        if len(p) != len(token_ids):
            raise ValueError("position_ids must have one (t, h, w) triple per token")
        tokens += token_ids
        pos += p
        caches += [cache] * len(token_ids)
    return tokens, pos, caches


def split_per_request(rows: list[Vec], requests: Sequence[tuple[Sequence[int], Any, Any]]) -> list:
    """The flattened rows split back per request, each a float32 [T_r, width] array."""
    out, at = [], 0
    for token_ids, _, _ in requests:
        out.append(as_rows(rows[at : at + len(token_ids)]))
        at += len(token_ids)
    return out
