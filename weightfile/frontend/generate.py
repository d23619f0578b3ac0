"""Streamed generation: prefill, then one token at a time until a stop id or the limit.

The same choice rule as `weightfile.ref.layers.sampling.generate` (greedy, or the seeded
spec/numerics.md §next-token sampler of spec/numerics.md), but yielding each token as it is chosen
and stopping at any of several ids (a chat model stops at <|im_end|> as well as the file's eos). The
greedy choice runs in NumPy on the float32 row: turning 151,936 logits into a Python list cost
milliseconds a token.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from weightfile.ref.layers.sampling import SplitMix64, sample


class Forward(Protocol):
    """What generation needs of a model: a cache and a forward pass over new tokens."""

    kernels: Any

    def new_cache(self) -> object: ...

    def forward(self, token_ids: Sequence[int], cache: object) -> np.ndarray: ...


def greedy_row(logits: Sequence[float] | np.ndarray) -> int:
    """`ref.layers.sampling.greedy` on a float32 row: the first index of the largest logit.

    The reference keeps index `best` unless a later v has v > logits[best]. A NaN is never
    greater, so NaNs are skipped, except at index 0: nothing is greater than a NaN there, so 0
    wins. NumPy's nanargmax (NaNs skipped, the first of equal maxima) is that rule otherwise;
    -0.0 and +0.0 are equal, so the first of them stays, as in the loop.
    """
    row = np.asarray(logits, dtype=np.float32).reshape(-1)
    if row.size == 0 or np.isnan(row[0]):
        return 0
    return int(np.nanargmax(row))


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
    if "logits" in inspect.signature(model.forward).parameters:  # only the last row is read
        logits = model.forward(list(prompt), cache, logits="last")[-1]
    else:
        logits = model.forward(list(prompt), cache)[-1]
    for step in range(max_new_tokens):
        if temperature <= 0:
            nxt = greedy_row(logits)
        else:  # the spec/numerics.md §next-token sampler is the reference's, on a list of float32
            # scalars
            nxt = sample(list(logits), temperature, rng, model.kernels)
        if nxt in stop_ids:
            return
        yield nxt
        if step + 1 < max_new_tokens:  # no logits are computed past the last token
            logits = model.forward([nxt], cache)[0]
