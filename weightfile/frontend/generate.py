"""Streamed generation: prefill, then one token at a time until a stop id or the limit.

The same choice rule as `weightfile.ref.model.sampling.generate` (greedy, or the seeded §11
sampler of spec/numerics.md), but yielding each token as it is chosen and stopping at any of
several ids (a chat model stops at <|im_end|> as well as the file's eos).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from weightfile.ref.model.sampling import SplitMix64, greedy, sample


class Forward(Protocol):
    """What generation needs of a model: a cache and a forward pass over new tokens."""

    kernels: Any

    def new_cache(self) -> object: ...

    def forward(self, token_ids: Sequence[int], cache: object) -> np.ndarray: ...


def stream_tokens(
    model: Forward,
    prompt: Sequence[int],
    max_new_tokens: int,
    stop_ids: Collection[int] = (),
    temperature: float = 0.0,
    seed: int = 0,
) -> Iterator[int]:
    """Each generated token id in order; a stop id ends the stream and is not yielded."""
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    cache = model.new_cache()
    rng = SplitMix64(seed)
    logits = model.forward(list(prompt), cache)[-1]
    for _ in range(max_new_tokens):
        row = list(logits)
        nxt = greedy(row) if temperature <= 0 else sample(row, temperature, rng, model.kernels)
        if nxt in stop_ids:
            return
        yield nxt
        logits = model.forward([nxt], cache)[0]
