"""Prefill, chunked prefill, token-by-token decode and batching give bit-identical logits
(spec/numerics.md §batch-invariance), for both layer types: the DeltaNet conv and recurrent states
and the attention K/V cache carry exactly what a longer prefill would have computed."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen35 import random_parameters, tiny_config

from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.ref.qwen35.trace import trace_names
from weightfile.ref.qwen35.weights import weights_from_parameters


@cache
def model(moe: bool) -> Qwen35Model:
    config = tiny_config(moe)
    return Qwen35Model(config, weights_from_parameters(config, random_parameters(config, 5)))


def run_in_chunks(m: Qwen35Model, tokens: list[int], sizes: list[int]) -> np.ndarray:
    c, rows, at = m.new_cache(), [], 0
    for size in sizes:
        rows.append(m.forward(tokens[at : at + size], c))
        at += size
    return np.concatenate(rows)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


@st.composite
def prompt_and_chunks(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    tokens = draw(st.lists(st.integers(0, 95), min_size=2, max_size=6))
    sizes, left = [], len(tokens)
    while left:
        sizes.append(draw(st.integers(1, left)))
        left -= sizes[-1]
    return tokens, sizes


@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
@settings(max_examples=6, deadline=None)  # each example runs the pure-Python model 3 times
@given(case=prompt_and_chunks())
def test_prefill_chunks_and_decode_agree_bitwise(moe: bool, case) -> None:
    tokens, sizes = case
    m = model(moe)
    whole = run_in_chunks(m, tokens, [len(tokens)])
    chunked = run_in_chunks(m, tokens, sizes)
    decoded = run_in_chunks(m, tokens, [1] * len(tokens))
    assert (bits(whole) == bits(chunked)).all()
    assert (bits(whole) == bits(decoded)).all()


def test_batch_of_sequences_equals_each_alone() -> None:
    m = model(False)
    a, b = [5, 17, 3, 88], [40, 2, 61]
    ca, cb = m.new_cache(), m.new_cache()
    batched = m.forward_batch([(a, ca, None), (b, cb, None)])
    assert (bits(batched[0]) == bits(m.forward(a, m.new_cache()))).all()
    assert (bits(batched[1]) == bits(m.forward(b, m.new_cache()))).all()
    # the caches continue independently: one more token each, decoded alone
    assert (bits(m.forward([9], ca)) == bits(run_in_chunks(m, [*a, 9], [5])[-1:])).all()
    assert (bits(m.forward([9], cb)) == bits(run_in_chunks(m, [*b, 9], [4])[-1:])).all()


@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_trace_names_and_widths(moe: bool) -> None:
    m = model(moe)
    recorder = TraceRecorder()
    logits = m.forward([1, 2, 3], m.new_cache(), trace=recorder)
    arrays = recorder.arrays()
    assert list(arrays) == trace_names(m.config.layer_types, moe)
    assert all(v.shape[0] == 3 and v.dtype == np.float32 for v in arrays.values())
    assert (bits(arrays["logits"]) == bits(logits)).all()
    c = m.config
    assert arrays["layers.0.gdn_qkv"].shape[1] == 2 * c.gdn_key_dim + c.gdn_value_dim
    assert arrays["layers.1.q_rope"].shape[1] == c.num_attention_heads * c.head_dim
    # partial rotary: dims past rotary_dim of every head pass through RoPE unchanged
    q, qr = arrays["layers.1.q_norm"], arrays["layers.1.q_rope"]
    for h in range(c.num_attention_heads):
        tail = slice(h * c.head_dim + c.rotary_dim, (h + 1) * c.head_dim)
        assert (bits(q[:, tail]) == bits(qr[:, tail])).all()
    # position 0 rotates by angle 0: cos 1, sin 0, so the rotated part is unchanged too
    assert (bits(q[0]) == bits(qr[0])).all() and not (bits(q[1]) == bits(qr[1])).all()


def test_out_of_vocabulary_token_is_rejected() -> None:
    m = model(False)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.forward([96], m.new_cache())
