"""The per-layer operations on every kernel path equal the reference bit for bit (issue 19 item 2).

fast/csrc/ops_body.h writes RMSNorm, RoPE, softmax, attention, exp and SwiGLU once over a vector
type; AVX2 and NEON instantiate it (spec/numerics.md §kernel-paths), the portable path keeps the
plain C of model_ops.c. Here every path usable on this machine (`each_isa`) meets the reference of
ref/numerics on hard inputs: lengths with and without a tail past the vector width, subnormals,
-0.0, ties between scores (equal keys), scores whose exps underflow to 0 or to subnormals, and
GQA groups from 1 to 16 query heads per kv head (odd groups take the one-query tail of the
two-queries-at-a-time kernel). NEON runs the same body under qemu
(tests/fast/neon/test_neon_ops.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.lanes import EPS, LENGTHS, attention_inputs, softmax_tail_cases, tail_cases
from strategies.layer_ops import bits, hard_vectors, ref_attend
from strategies.tiny_vqf import ModelSpec, write_model_file
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.fast.qwen3 import open_model
from weightfile.ref.numerics import norm, rope
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf


@settings(max_examples=40, deadline=None)
@given(data=st.data(), rows=st.integers(1, 3), n=st.integers(1, 70))
def test_rmsnorm_every_isa(data: st.DataObject, rows: int, n: int) -> None:
    scale = data.draw(st.sampled_from([1e-20, 1e-3, 1.0, 1e15]))  # ss subnormal .. near overflow
    x = np.stack([data.draw(hard_vectors(n, scale)) for _ in range(rows)])
    w = data.draw(hard_vectors(n, 1.0))
    eps = np.float32(data.draw(st.sampled_from([1e-6, 1e-5])))
    with np.errstate(all="ignore"):
        want = [v for r in x for v in norm.rmsnorm(list(r), list(w), eps)]
    for _isa in each_isa():
        out = np.empty_like(x)
        kernels().wf_rmsnorm_rows(address(x), rows, n, address(w), eps, address(out))
        assert bits(out) == bits(want), _isa


@pytest.mark.parametrize("n", LENGTHS)
def test_rmsnorm_tail_terms_in_their_lanes_every_isa(n: int) -> None:
    """spec/numerics.md §lanes: rows where moving any one tail term of the sum of squares to
    another lane changes the output (tests/strategies/lanes.py), on every path (issue 36 item 8;
    NEON: tests/fast/neon/test_neon_tails.py)."""
    rows, _ = tail_cases(n)
    w = np.ones(n, dtype=np.float32)
    want = [v for r in rows for v in norm.rmsnorm(list(r), list(w), EPS)]
    for _isa in each_isa():
        out = np.empty_like(rows)
        kernels().wf_rmsnorm_rows(address(rows), len(rows), n, address(w), EPS, address(out))
        assert bits(out) == bits(want), _isa


@pytest.mark.parametrize("n", LENGTHS)
def test_softmax_tail_terms_in_their_lanes_every_isa(n: int) -> None:
    """spec/numerics.md §lanes for softmax's sum: heads whose probabilities (the outputs, values
    being unit vectors) change when any one tail exponential goes to another lane
    (tests/strategies/lanes.py), on every path (issue 36 item 8)."""
    a, _ = softmax_tail_cases(n)
    q, keys, values, hd = attention_inputs(a)
    m = len(a)
    want = ref_attend(q, keys, values, m, m, hd)
    for _isa in each_isa():
        out = np.full(m * hd, np.nan, np.float32)
        scores = np.empty(n, np.float32)
        for g in range(m):
            kernels().wf_attend_group(
                address(q), address(keys), address(values), n, m * hd, m, m, hd, g,
                address(scores), address(out),
            )  # fmt: skip
        assert bits(out) == bits(want), _isa


@settings(max_examples=30, deadline=None)
@given(data=st.data(), tokens=st.integers(1, 3), heads=st.integers(1, 4))
def test_norm_rope_every_isa(data: st.DataObject, tokens: int, heads: int) -> None:
    hd = data.draw(st.sampled_from([2, 8, 18, 32, 64, 128]))  # tails past 4 and 8 lanes
    x = data.draw(hard_vectors(tokens * heads * hd, 2.0)).reshape(tokens, heads * hd)
    w = data.draw(hard_vectors(hd, 1.0))
    cos = data.draw(hard_vectors(tokens * hd // 2, 1.0)).reshape(tokens, hd // 2)
    sin = data.draw(hard_vectors(tokens * hd // 2, 1.0)).reshape(tokens, hd // 2)
    eps = np.float32(1e-6)
    want_n, want_r = [], []
    with np.errstate(all="ignore"):
        for t in range(tokens):
            for h in range(heads):
                n = norm.rmsnorm(list(x[t, h * hd : (h + 1) * hd]), list(w), eps)
                want_n += n
                want_r += rope.apply_rope(n, list(cos[t]), list(sin[t]))
    for _isa in each_isa():
        normed, rotated = np.empty_like(x), np.empty_like(x)
        kernels().wf_norm_rope(
            address(x), tokens, heads, hd, address(w), eps, address(cos), address(sin),
            address(normed), address(rotated),
        )  # fmt: skip
        assert bits(normed) == bits(want_n), _isa
        assert bits(rotated) == bits(want_r), _isa


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    shape=st.sampled_from([(1, 1), (2, 1), (3, 1), (5, 1), (16, 1), (4, 2), (6, 2), (8, 8)]),
    hd=st.sampled_from([32, 64, 128]),
    npos=st.integers(1, 11),
    scale=st.sampled_from([0.05, 1.0, 12.0]),  # 12: score gaps of hundreds, exps underflow
    ties=st.booleans(),
)
def test_attention_group_every_isa(data, shape, hd, npos, scale, ties) -> None:
    heads, kv_heads = shape
    stride = kv_heads * hd
    q = data.draw(hard_vectors(heads * hd, scale))
    keys = data.draw(hard_vectors(npos * stride, scale)).reshape(npos, stride)
    values = data.draw(hard_vectors(npos * stride, 1.0)).reshape(npos, stride)
    if ties:  # equal keys: equal scores, the maximum reached more than once
        keys[1::2] = keys[0]
    want = ref_attend(q, keys, values, heads, kv_heads, hd)
    for _isa in each_isa():
        for g_first in (True, False):
            out = np.full(heads * hd, np.nan, np.float32)
            scores = np.empty((heads // kv_heads) * npos, np.float32)
            if g_first:  # the one-call forward's form: a whole kv group per call
                for g in range(kv_heads):
                    kernels().wf_attend_group(
                        address(q), address(keys), address(values), npos, stride, heads,
                        kv_heads, hd, g, address(scores), address(out),
                    )  # fmt: skip
            else:  # the traced path's form: one head at a time, npos floats of scores
                kernels().wf_attend(
                    address(q), address(keys), address(values), npos, stride, heads, kv_heads,
                    hd, address(scores), address(out),
                )  # fmt: skip
            assert bits(out) == bits(want), (_isa, g_first)


@settings(max_examples=3, deadline=None)
@given(
    shape=st.sampled_from([(6, 2, 32), (4, 1, 64), (2, 2, 32)]),  # groups 3 (odd), 4 and 1
    seed=st.integers(0, 2**32 - 1),
    prompt=st.integers(5, 7),
)
def test_one_call_forward_threads_and_isas_equal_ref(shape, seed: int, prompt: int) -> None:
    """The one-call forward (fast/csrc/layers.c: attention units are (token, kv head) groups on
    the pool) with head dims the SIMD attention takes: logits of a prefill and two decode steps
    equal the reference's for 1, 2 and 3 threads on every path (spec/numerics.md §threads)."""
    heads, kv_heads, hd = shape
    config = Qwen3Config(
        vocab_size=40, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=hd,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, mrope_section=None,
    )  # fmt: skip
    spec = ModelSpec(config, "q4_0", True, seed)
    rng = np.random.default_rng(seed)
    steps = [rng.integers(0, 40, prompt).tolist(), [int(rng.integers(40))], [int(rng.integers(40))]]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref = Qwen3Model(*bind_vqf(vqf))
            ref_cache = ref.new_cache()
            want = [ref.forward(ids, ref_cache) for ids in steps]
            for isa in each_isa():
                for n in (1, 2, 3):
                    fast = open_model(vqf, threads=n)
                    cache = fast.new_cache()
                    for ids, w in zip(steps, want, strict=True):
                        got = fast.forward(ids, cache)
                        assert bits(got) == bits(w), (isa, n)
