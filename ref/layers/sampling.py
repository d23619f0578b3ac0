"""Choosing the next token: greedy and seeded sampling (spec/numerics.md §next-token).

Seeded sampling is reproducible everywhere: the random stream is SplitMix64 (a published 64-bit
integer recurrence), each draw is turned into a binary32 in [0, 1) exactly, and the
distribution is the profile's softmax of logits / temperature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from weightfile.ref.numerics.kernels import Kernels

MASK64 = (1 << 64) - 1


def greedy(logits: Sequence[np.float32]) -> int:
    """The first index of the largest logit (ties go to the lower index)."""
    best = 0
    for i, v in enumerate(logits):
        if v > logits[best]:
            best = i
    return best


class SplitMix64:
    """SplitMix64: state += 0x9E3779B97F4A7C15, then two xor-shift-multiply rounds."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform_f32(self) -> np.float32:
        """The top 24 bits as an exact binary32 in [0, 1): (u >> 40) * 2**-24."""
        return np.float32((self.next_u64() >> 40) * 2.0**-24)


def sample(
    logits: Sequence[np.float32], temperature: float, rng: SplitMix64, kernels: Kernels
) -> int:
    """spec/numerics.md §next-token Draw u; return the first i whose running float32 sum of p
    exceeds u."""
    t = np.float32(temperature)
    probs = kernels.softmax([v / t for v in logits])
    u = rng.uniform_f32()
    running = np.float32(0)
    last = 0
    for i, p in enumerate(probs):
        running = running + p
        if p > 0:
            last = i
        if u < running:
            return i
    return last  # rounding left the total below u: the last token with p > 0


class Decoder(Protocol):
    """What generation needs of a model, whatever its family: a cache, a forward pass and the
    profile's kernels (the sampler's softmax)."""

    kernels: Kernels

    def new_cache(self) -> Any: ...
    def forward(self, token_ids: Sequence[int], cache: Any) -> np.ndarray: ...


def generate(
    model: Decoder,
    prompt: Sequence[int],
    max_new_tokens: int,
    eos_id: int | None = None,
    temperature: float = 0.0,
    seed: int = 0,
) -> list[int]:
    """Prefill the prompt, then decode one token at a time; stop at eos_id (not returned)."""
    cache = model.new_cache()
    rng = SplitMix64(seed)
    logits = model.forward(list(prompt), cache)[-1]
    out: list[int] = []
    for _ in range(max_new_tokens):
        row = list(logits)
        nxt = greedy(row) if temperature <= 0 else sample(row, temperature, rng, model.kernels)
        if nxt == eos_id:
            break
        out.append(nxt)
        logits = model.forward([nxt], cache)[0]
    return out
