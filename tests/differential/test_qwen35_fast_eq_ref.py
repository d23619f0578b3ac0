"""The fast Qwen3.5 forward pass equals the reference bit for bit (spec/models.md §qwen35-forward,
§qwen35-trace; spec/numerics.md §lanes8-tree, §gdn; issue 28).

Hypothesis writes small random `.ninfer` Qwen3.5 files (tests/strategies/qwen35_mixed.py: both
layer types in several patterns, dense and MoE, a matrix format per object among bf16, fp32,
q4/q5/q6/q8/t2 row split and fp8 row scale, fusion parents bound by parts or whole objects, one
volume or several, hard values: subnormal and huge embeddings, exact router ties, extreme GDN gates,
zeroed norms) and compares logits and every traced activation as uint32 views: a prefill, the
same prompt as a chunked prefill, then decode steps, with 1 and 2 threads, on every kernel path
usable here (spec/numerics.md §kernel-paths); the untraced pass (the decoder layers as one C call
when the FFNs are dense) gives the same logits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen35_mixed import Qwen35Spec, qwen35_specs, write_file
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import each_isa
from weightfile.fast.qwen35 import ffn, open_model
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer


def assert_same_bits(name: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape, (name, got.shape, want.shape)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, f"{name}: {bad.size} elements differ, first at {bad[0]}"


def assert_same_trace(got: TraceRecorder, want: TraceRecorder) -> None:
    g, w = got.arrays(), want.arrays()
    assert list(g) == list(w)
    for name in w:
        assert_same_bits(name, g[name], w[name])


@st.composite
def plans(draw: st.DrawFn, spec: Qwen35Spec) -> tuple[list[int], list | None, int, list[int]]:
    """(prompt of 1-5 tokens, its MRoPE ids or None, a chunk split point, 1-2 decode tokens);
    a prompt may repeat one token (exact ties in the attention scores)."""
    vocab = spec.config.vocab_size
    token = st.integers(0, vocab - 1)
    if draw(st.booleans()):
        prompt = draw(st.lists(token, min_size=1, max_size=5))
    else:
        prompt = [draw(token)] * draw(st.integers(2, 4))
    pos = None
    if draw(st.booleans()):
        triple = st.tuples(*[st.integers(0, 6)] * 3).map(list)
        pos = draw(st.lists(triple, min_size=len(prompt), max_size=len(prompt)))
    split = draw(st.integers(0, len(prompt)))
    return prompt, pos, split, draw(st.lists(token, min_size=1, max_size=2))


def reference_run(nf, prompt, pos, decode) -> tuple[list[np.ndarray], TraceRecorder]:
    """Reference logits of the prefill and of each decode step, and the whole trace."""
    ref = Qwen35Model(*bind_ninfer(nf))
    cache, trace = ref.new_cache(), TraceRecorder()
    out = [ref.forward(prompt, cache, pos, trace)]
    out += [ref.forward([t], cache, None, trace) for t in decode]
    return out, trace


def fast_run(
    model, prompt, pos, split, decode, chunked: bool, traced: bool = True
) -> tuple[np.ndarray, TraceRecorder | None]:
    """The same on the fast model: the prompt whole, or as two calls split at `split`. Untraced,
    a model whose FFNs are all dense runs its layers as one C call (fast/qwen35/forward.py)."""
    cache, trace = model.new_cache(), TraceRecorder() if traced else None
    parts = [(prompt[:split], None if pos is None else pos[:split]), (prompt[split:], None)]
    if pos is not None:
        parts[1] = (prompt[split:], pos[split:])
    calls = [p for p in parts if p[0]] if chunked else [(prompt, pos)]
    rows = [model.forward(ids, cache, p, trace) for ids, p in calls]
    rows += [model.forward([t], cache, None, trace) for t in decode]
    assert cache.length == len(prompt) + len(decode)
    return np.concatenate(rows), trace


@settings(max_examples=25)
@given(spec=qwen35_specs(), data=st.data())
def test_forward_fast_equals_ref(spec: Qwen35Spec, data: st.DataObject) -> None:
    prompt, pos, split, decode = data.draw(plans(spec))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(spec, Path(tmp) / "m.ninfer")
        with open_artifact(path) as nf:
            want_rows, want_trace = reference_run(nf, prompt, pos, decode)
            want = np.concatenate(want_rows)
            models = [open_model(nf, threads=n) for n in (1, 2)]
            for isa in each_isa():
                for model in models:
                    for chunked in (False, True):
                        got, trace = fast_run(model, prompt, pos, split, decode, chunked)
                        where = f"{isa}, threads={model.threads}, chunked={chunked}"
                        assert_same_bits(f"logits ({where})", got, want)
                        assert_same_trace(trace, want_trace)
                        got, _ = fast_run(model, prompt, pos, split, decode, chunked, False)
                        assert_same_bits(f"untraced logits ({where})", got, want)


@settings(max_examples=5)
@given(spec=qwen35_specs(), data=st.data())
def test_batch_and_last_logits_equal_ref(spec: Qwen35Spec, data: st.DataObject) -> None:
    """Two requests in one forward_batch give each request's own logits; logits="last" gives
    the last row of each (spec/numerics.md §batch-invariance)."""
    vocab = spec.config.vocab_size
    a = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3))
    b = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(spec, Path(tmp) / "m.ninfer")
        with open_artifact(path) as nf:
            ref = Qwen35Model(*bind_ninfer(nf))
            want = [ref.forward(ids, ref.new_cache()) for ids in (a, b)]
            fast = open_model(nf, threads=2)
            got = fast.forward_batch([(a, fast.new_cache(), None), (b, fast.new_cache(), None)])
            last = fast.forward_batch(
                [(a, fast.new_cache(), None), (b, fast.new_cache(), None)], logits="last"
            )
    for g, lg, w in zip(got, last, want, strict=True):
        assert_same_bits("batch logits", g, w)
        assert_same_bits("last logits", lg, w[-1:])


@settings(max_examples=6)
@given(spec=qwen35_specs(), data=st.data())
def test_forward_rows_equals_ref(spec: Qwen35Spec, data: st.DataObject) -> None:
    """`forward_rows`: some tokens' embeddings replaced by given rows (hard values: subnormal,
    huge, signed zeros), then a decode step; logits and the trace equal the reference's
    `forward_rows` bit for bit (the image rows of spec/models.md §qwen35-vision)."""
    vocab, hidden = spec.config.vocab_size, spec.config.hidden_size
    prompt = data.draw(st.lists(st.integers(0, vocab - 1), min_size=2, max_size=4))
    at = data.draw(st.sets(st.integers(0, len(prompt) - 1), min_size=1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    special = np.array([0.0, -0.0, 2.0**-140, -3.0e30, 1.5], np.float32)
    rows = {}
    for i in sorted(at):
        row = rng.normal(0, 1, hidden).astype(np.float32)
        row[rng.integers(0, hidden, 3)] = special[rng.integers(0, special.size, 3)]
        rows[i] = row
    step = data.draw(st.integers(0, vocab - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(spec, Path(tmp) / "m.ninfer")
        with open_artifact(path) as nf:
            ref = Qwen35Model(*bind_ninfer(nf))
            cache, want_trace = ref.new_cache(), TraceRecorder()
            want = [ref.forward_rows(prompt, cache, None, want_trace, rows)]
            want.append(ref.forward([step], cache, None, want_trace))
            fast = open_model(nf, threads=2)
            for _isa in each_isa():
                c, trace = fast.new_cache(), TraceRecorder()
                got = [fast.forward_rows(prompt, c, None, trace, rows)]
                got.append(fast.forward([step], c, None, trace))
                assert_same_bits("rows logits", np.concatenate(got), np.concatenate(want))
                assert_same_trace(trace, want_trace)


@settings(max_examples=5)
@given(spec=qwen35_specs().filter(lambda s: s.config.is_moe), data=st.data())
def test_experts_one_at_a_time_equal_ref(spec: Qwen35Spec, data: st.DataObject) -> None:
    """The MoE path a layer takes when some expert matrix is not read in place (a Hadamard
    input): the chosen experts one at a time in Python, not `wf_q35_experts`; its logits equal
    the reference's for a prompt and a decode step, 1 and 2 threads."""
    prompt, _, _, decode = data.draw(plans(spec))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(spec, Path(tmp) / "m.ninfer")
        with open_artifact(path) as nf:
            want, _ = reference_run(nf, prompt, None, decode)
            with pytest.MonkeyPatch.context() as mp:
                init = ffn.ExpertsBinding.__init__

                def loose(self, w) -> None:
                    init(self, w)
                    self.fused = False

                mp.setattr(ffn.ExpertsBinding, "__init__", loose)
                for n in (1, 2):
                    model = open_model(nf, threads=n)
                    got, _ = fast_run(model, prompt, None, 0, decode, False, False)
                    bindings = [b for b in model._bindings.values() if hasattr(b, "fused")]
                    assert bindings and not any(b.fused for b in bindings)
                    assert_same_bits(f"logits (threads={n})", got, np.concatenate(want))
