"""The fast forward pass equals the reference bit for bit (spec/models.md §qwen3-forward, issue 6).

Hypothesis writes small random VQF model files -- geometry inside the dense Qwen3 / Qwen3-VL family,
projections in every layout (Q8_0, 8x8-tiled, G256, Q4I8, Q4_0, 4x4-tiled, F32, F16), F16 or F32
embeddings, tied or not, MRoPE or not -- and compares logits and every traced activation as uint32
views (logits also untraced: the one-call layer path), for a prefill and decode steps, in both
quantized modes (spec/numerics.md §q8-activation, §f32-weights), with 1 and 3 threads, on every
kernel path usable here (spec/numerics.md §kernel-paths). Binding errors are the reference binder's
(class, rule, offset, path).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.tiny_vqf import ModelSpec, model_specs, write_model_file
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import each_isa
from weightfile.fast.qwen3 import open_model
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import WeightfileError
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul


def assert_same_bits(name: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape, name
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, f"{name}: {bad.size} elements differ, first at {bad[0]}"


def assert_same_trace(got: TraceRecorder, want: TraceRecorder) -> None:
    g, w = got.arrays(), want.arrays()
    assert list(g) == list(w)
    for name in w:
        assert_same_bits(name, g[name], w[name])


@st.composite
def steps(draw: st.DrawFn, spec: ModelSpec) -> list[tuple[list[int], list | None]]:
    """A prompt (1-4 tokens) then 1-2 single-token decode steps; MRoPE files may get
    arbitrary (t, h, w) ids for the prompt, as an image span would have."""
    vocab = spec.config.vocab_size
    prompt = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=4))
    pos = None
    if spec.config.mrope_section and draw(st.booleans()):
        triple = st.tuples(*[st.integers(0, 5)] * 3).map(list)
        pos = draw(st.lists(triple, min_size=len(prompt), max_size=len(prompt)))
    out = [(prompt, pos)]
    for _ in range(draw(st.integers(1, 2))):
        out.append(([draw(st.integers(0, vocab - 1))], None))
    return out


@settings(max_examples=50)
@given(data=st.data(), spec=model_specs(), mode=st.sampled_from(list(QuantizedMatmul)))
def test_forward_fast_equals_ref(data: st.DataObject, spec: ModelSpec, mode) -> None:
    plan = data.draw(steps(spec))
    profile = CANONICAL.with_quantized_matmul(mode)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref = Qwen3Model(*bind_vqf(vqf), profile)
            # one cache per (path, thread count, traced or not) against one ref run: a traced
            # forward takes the step-by-step path, an untraced one the one-call layers.c path
            fast = [open_model(vqf, threads=n, profile=profile) for n in (1, 3)]
            ref_cache = ref.new_cache()
            isas = list(each_isa())
            caches = {
                (isa, i, traced): m.new_cache()
                for isa in isas
                for i, m in enumerate(fast)
                for traced in (True, False)
            }
            for tokens, pos in plan:
                want_trace = TraceRecorder()
                want = ref.forward(tokens, ref_cache, pos, want_trace)
                for isa in each_isa():
                    for i, model in enumerate(fast):
                        for traced in (True, False):
                            cache = caches[isa, i, traced]
                            got_trace = TraceRecorder() if traced else None
                            got = model.forward(tokens, cache, pos, got_trace)
                            assert_same_bits(f"logits ({isa}, traced={traced})", got, want)
                            if got_trace is not None:
                                assert_same_trace(got_trace, want_trace)
                            assert cache.length == ref_cache.length


@settings(max_examples=8)
@given(data=st.data(), spec=model_specs(), mode=st.sampled_from(list(QuantizedMatmul)))
def test_a_long_prompt_splits_its_token_steps_on_the_pool(
    data: st.DataObject, spec: ModelSpec, mode
) -> None:
    """Prompts of 9-40 tokens, then a decode step: the one-call path runs the steps between the
    products (norms with the activation quantizer, q / k norm and rotation, SwiGLU, the
    quantizer alone) on the pool in chunks of at least eight tokens, so some chunk starts past
    token 0 and reads its rows, codes and scales at an offset; logits equal the reference's
    with 2 and 3 threads on every kernel path (spec/numerics.md §threads)."""
    vocab = spec.config.vocab_size
    prompt = data.draw(st.lists(st.integers(0, vocab - 1), min_size=9, max_size=40))
    nxt = data.draw(st.integers(0, vocab - 1))
    profile = CANONICAL.with_quantized_matmul(mode)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref = Qwen3Model(*bind_vqf(vqf), profile)
            ref_cache = ref.new_cache()
            want = [ref.forward(prompt, ref_cache), ref.forward([nxt], ref_cache)]
            for n in (2, 3):
                fast = open_model(vqf, threads=n, profile=profile)
                for isa in each_isa():
                    cache = fast.new_cache()
                    got = [fast.forward(prompt, cache), fast.forward([nxt], cache)]
                    for name, g, w in zip(("prompt", "next"), got, want, strict=True):
                        assert_same_bits(f"{name} logits ({isa}, threads={n})", g, w)


@settings(max_examples=6)
@given(spec=model_specs(), data=st.data())
def test_forward_batch_fast_equals_ref(spec: ModelSpec, data: st.DataObject) -> None:
    """Two sequences in one layer-major call give each sequence's own logits, as in ref."""
    vocab = spec.config.vocab_size
    a, b = (data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3)) for _ in "ab")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref, fast = Qwen3Model(*bind_vqf(vqf)), open_model(vqf, threads=2)
            want = ref.forward_batch([(a, ref.new_cache(), None), (b, ref.new_cache(), None)])
            got = fast.forward_batch([(a, fast.new_cache(), None), (b, fast.new_cache(), None)])
            for g, w in zip(got, want, strict=True):
                assert_same_bits("logits", g, w)


@settings(max_examples=6)
@given(spec=model_specs(), data=st.data())
def test_last_logits_equal_refs_last_rows(spec: ModelSpec, data: st.DataObject) -> None:
    """forward(..., logits="last") returns the reference's last row [1, vocab] (alone, traced,
    batched), fills the cache as a full forward does (the next decode step is ref's), and
    refuses a value that is neither "all" nor "last"."""
    vocab = spec.config.vocab_size
    a, b = (data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=7)) for _ in "ab")
    nxt = data.draw(st.integers(0, vocab - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref, fast = Qwen3Model(*bind_vqf(vqf)), open_model(vqf, threads=2)
            ref_cache = ref.new_cache()
            want_a = ref.forward(a, ref_cache)
            want_next = ref.forward([nxt], ref_cache)
            want_b = ref.forward(b, ref.new_cache())
            cache = fast.new_cache()
            assert_same_bits("last", fast.forward(a, cache, logits="last"), want_a[-1:])
            assert cache.length == len(a)
            assert_same_bits("next", fast.forward([nxt], cache), want_next)
            traced = fast.forward(a, fast.new_cache(), trace=TraceRecorder(), logits="last")
            assert_same_bits("traced", traced, want_a[-1:])
            got = fast.forward_batch(
                [(a, fast.new_cache(), None), (b, fast.new_cache(), None)], logits="last"
            )
            for g, w in zip(got, (want_a, want_b), strict=True):
                assert_same_bits("batched", g, w[-1:])
            with pytest.raises(ValueError, match="logits"):
                fast.forward(a, fast.new_cache(), logits="first")


def outcome(fn) -> tuple:
    try:
        fn()
    except WeightfileError as exc:
        return (type(exc).__name__, exc.rule, exc.offset, exc.path)
    except ValueError as exc:
        return ("ValueError", str(exc))
    return ("ok",)


BREAKS = {
    "missing matrix": lambda t: [s for s in t if s.name != "q8_k"],
    "missing norm": lambda t: [s for s in t if s.name != "k_norm"],
    "missing embedding": lambda t: [s for s in t if s.name != "token_embed"],
    "wrong size": lambda t: [s if s.name != "q8_up" else truncated(s) for s in t],
}


def truncated(source):
    from dataclasses import replace

    row_bytes = -(-source.cols // 32) * 34  # one directory row of Q8_0 blocks
    return replace(source, data=source.data[:-row_bytes], rows=source.rows - 1)


@pytest.mark.parametrize("what", sorted(BREAKS))
def test_bind_errors_equal_ref(what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from strategies import tiny_vqf

    from weightfile.ref.qwen3.config import Qwen3Config

    config = Qwen3Config(40, 32, 64, 1, 2, 1, 16, 10000.0, 1e-6, False)
    spec = ModelSpec(config, "q8_0", True, 3)
    real_write = tiny_vqf.write_vqf
    monkeypatch.setattr(
        tiny_vqf,
        "write_vqf",
        lambda p, tensors, **kw: real_write(p, tensors=BREAKS[what](tensors), **kw),
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            want = outcome(lambda: bind_vqf(vqf))
            got = outcome(lambda: open_model(vqf))
    assert want[0] != "ok" and got == want


@settings(max_examples=2)
@given(spec=model_specs())
def test_a_subclass_overriding_a_block_keeps_the_step_by_step_path(spec: ModelSpec) -> None:
    """An MoE or VL decoder that overrides mlp_block must not be bypassed by the one-call
    layers.c path; the dense class takes that path."""
    from weightfile.fast.qwen3.decoder import FastQwen3Model

    class Overriding(FastQwen3Model):
        def mlp_block(self, i, lw, h, hook):
            return super().mlp_block(i, lw, h, hook)

    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            dense = open_model(vqf)
            assert len(dense._layers) == spec.config.num_hidden_layers
            sub = Overriding(dense.config, dense.weights)
            assert len(sub._layers) == 0


@settings(max_examples=8)
@given(spec=model_specs(), data=st.data())
def test_a_prompt_cut_into_chunks_gives_the_reference_bits(spec: ModelSpec, data: st.DataObject):
    """The one-call path cuts a long prompt into chunks under CALL_BUDGET_MACS (so Ctrl-C is
    honoured between calls); with the budget drawn down to a token or a few per chunk, logits
    and the next decode step are still the reference's (spec/numerics.md §batch-invariance)."""
    from weightfile.fast.qwen3 import decoder

    vocab = spec.config.vocab_size
    prompt = data.draw(st.lists(st.integers(0, vocab - 1), min_size=2, max_size=12))
    nxt = data.draw(st.integers(0, vocab - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_model_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref, fast = Qwen3Model(*bind_vqf(vqf)), open_model(vqf, threads=2)
            ref_cache = ref.new_cache()
            want, want_next = ref.forward(prompt, ref_cache), ref.forward([nxt], ref_cache)
            # one token's weights are the floor: 1 token per call, up to about 5
            weights = decoder.CALL_BUDGET_MACS
            most = data.draw(st.integers(1, 5))
            decoder.CALL_BUDGET_MACS = most * per_token_macs(fast)
            try:
                chunks = []
                inner = fast._forward_chunk
                fast._forward_chunk = lambda x, *rest: chunks.append(len(x)) or inner(x, *rest)
                cache = fast.new_cache()
                assert_same_bits("chunked", fast.forward(prompt, cache), want)
                assert_same_bits("next", fast.forward([nxt], cache), want_next)
            finally:
                decoder.CALL_BUDGET_MACS = weights
            if fast._layers:  # the dense one-call path (other layer types go step by step)
                assert sum(chunks) == len(prompt) + 1 and max(chunks) <= most


def per_token_macs(model) -> int:
    from weightfile.fast.qwen3.decoder import LAYER_MATRICES

    return sum(getattr(lw, f).rows * getattr(lw, f).cols
               for lw in model.weights.layers for f in LAYER_MATRICES)  # fmt: skip
