"""Batch invariance (spec/numerics.md §batch-invariance): prefill, chunked prefill and one-by-one
decode give bit-identical logits for every token, with float32 and with quantized (logical-word)
weights."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.model import dense, quantized, random_weights, tiny_config, token_ids

from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

CONFIG = tiny_config()
PROFILES = {
    "f32": (dense, CANONICAL),
    "q8_activation": (quantized, CANONICAL),
    "f32_weights": (quantized, CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS)),
}


@cache
def model(kind: str) -> Qwen3Model:
    make, profile = PROFILES[kind]
    return Qwen3Model(CONFIG, random_weights(CONFIG, seed=11, make=make), profile)


def run_in_chunks(m: Qwen3Model, tokens: list[int], sizes: list[int]) -> tuple[np.ndarray, dict]:
    """Feed the tokens in consecutive chunks of the given sizes; return logits and the trace."""
    cache_, trace = m.new_cache(), TraceRecorder()
    rows, at = [], 0
    for size in sizes:
        rows.append(m.forward(tokens[at : at + size], cache_, trace=trace))
        at += size
    return np.concatenate(rows), trace.arrays()


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


@st.composite
def prompt_and_chunks(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    tokens = draw(token_ids(CONFIG.vocab_size, min_size=2, max_size=7))
    sizes, left = [], len(tokens)
    while left:
        sizes.append(draw(st.integers(1, left)))
        left -= sizes[-1]
    return tokens, sizes


@pytest.mark.parametrize("kind", sorted(PROFILES))
@settings(max_examples=25)  # each example runs the pure-Python decoder 3 times
@given(case=prompt_and_chunks())
def test_prefill_chunks_and_decode_agree_bitwise(kind: str, case) -> None:
    tokens, sizes = case
    m = model(kind)
    prefill, prefill_trace = run_in_chunks(m, tokens, [len(tokens)])
    chunked, chunked_trace = run_in_chunks(m, tokens, sizes)
    decode, _ = run_in_chunks(m, tokens, [1] * len(tokens))
    assert (bits(prefill) == bits(decode)).all()
    assert (bits(prefill) == bits(chunked)).all()
    for name, arr in prefill_trace.items():  # every intermediate, not only the logits
        assert (bits(arr) == bits(chunked_trace[name])).all(), name


def test_a_token_does_not_depend_on_later_tokens() -> None:
    m = model("q8_activation")
    a, _ = run_in_chunks(m, [1, 2, 3, 4], [4])
    b, _ = run_in_chunks(m, [1, 2, 30, 40], [4])
    assert (bits(a[:2]) == bits(b[:2])).all()
    assert not (bits(a[2:]) == bits(b[2:])).all()  # later tokens do see their own input


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[list[int], list[int]]]:
    """2-3 sequences, each with a prefix already in its cache and new tokens for the batch."""
    n = draw(st.integers(2, 3))
    return [
        (draw(token_ids(CONFIG.vocab_size, 0, 3)), draw(token_ids(CONFIG.vocab_size, 1, 3)))
        for _ in range(n)
    ]


@settings(max_examples=15)
@given(batch=batches())
def test_batch_composition_does_not_change_a_sequence(batch) -> None:
    """A sequence's logits are the same alone or batched with others at other positions."""
    m = model("q8_activation")
    caches, requests = [], []
    for prefix, new in batch:
        cache = m.new_cache()
        if prefix:
            m.forward(prefix, cache)
        caches.append(cache)
        requests.append((new, cache, None))
    together = m.forward_batch(requests)
    for (prefix, new), got in zip(batch, together, strict=True):
        alone, _ = run_in_chunks(m, prefix + new, [len(prefix + new)])
        assert (bits(got) == bits(alone[len(prefix) :])).all()


def test_a_batch_needs_distinct_caches() -> None:
    m = model("f32")
    cache = m.new_cache()
    with pytest.raises(ValueError, match="own cache"):
        m.forward_batch([([1], cache, None), ([2], cache, None)])
