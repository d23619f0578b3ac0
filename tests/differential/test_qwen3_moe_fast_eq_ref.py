"""The fast Qwen3-MoE forward pass equals the reference bit for bit (spec/models.md
§qwen3-moe-forward).

Hypothesis writes small random version-3 VQF files (2-6 experts, top 1..E, Ie 32 or 64, every
expert layout: Q8_0 untiled and 8x8, Q4_0 untiled and 4x4, F32, F16; tied or not) with router
ties drawn on purpose (duplicated router rows, a zero router), and compares logits and every
traced value (router logits, chosen experts, their weights, the MoE output ...) as uint32 views,
for a prefill and decode steps, in both quantized modes, with 1 and 3 threads. Binding errors
are the reference binder's (class, rule, path).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.tiny_moe import MoeSpec, moe_config, moe_file_parts, moe_specs, write_moe_file
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast.qwen3_moe import open_model
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf
from weightfile.ref.qwen3_moe.decoder import Qwen3MoeModel
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.errors import WeightfileError
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul


def assert_same_bits(name: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape, name
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, f"{name}: {bad.size} elements differ, first at {bad[0]}"


@settings(max_examples=12, deadline=None)
@given(
    spec=moe_specs(),
    mode=st.sampled_from(list(QuantizedMatmul)),
    threads=st.sampled_from([1, 3]),
    data=st.data(),
)
def test_fast_moe_forward_equals_ref_bit_for_bit(spec: MoeSpec, mode, threads, data) -> None:
    vocab = spec.config.vocab_size
    prompt = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=4))
    decode = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=2))
    profile = CANONICAL.with_quantized_matmul(mode)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_moe_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            config, weights = bind_vqf(vqf)
            ref = Qwen3MoeModel(config, weights, profile)
            fast = open_model(vqf, threads=threads, profile=profile)
            rc, fc, rt, ft = ref.new_cache(), fast.new_cache(), TraceRecorder(), TraceRecorder()
            for step in [prompt, *[[t] for t in decode]]:
                want = ref.forward(step, rc, trace=rt)
                got = fast.forward(step, fc, trace=ft)
                assert_same_bits(f"logits {spec.describe()}", got, want)
    g, w = ft.arrays(), rt.arrays()
    assert list(g) == list(w)
    for name in w:
        assert_same_bits(name, g[name], w[name])


def test_a_zero_router_ties_every_expert_and_the_lowest_indices_win(tmp_path):
    """Guard that the property reaches ties: all E logits equal, the k lowest experts chosen,
    each weighted 1/k, by both paths."""
    spec = MoeSpec(moe_config(experts=5, top_k=3), "q8_0", "zero", 1)
    with open_vqf(write_moe_file(tmp_path / "m.vqf", spec)) as vqf:
        ref = Qwen3MoeModel(*bind_vqf(vqf))
        fast = open_model(vqf, threads=1)
        traces = []
        for model in (ref, fast):
            trace = TraceRecorder()
            model.forward([1, 2], model.new_cache(), trace=trace)
            traces.append(trace.arrays())
    for t in traces:
        assert (t["layers.0.moe_experts"] == [[0, 1, 2], [0, 1, 2]]).all()
        assert (t["layers.0.router_logits"] == 0).all()
        assert np.allclose(t["layers.0.moe_weights"], 1 / 3)
    assert_same_bits("moe_out", traces[1]["layers.0.moe_out"], traces[0]["layers.0.moe_out"])


@pytest.mark.parametrize(
    "change", [{"top_k": 0}, {"n_experts": 2, "top_k": 1, "moe_ffn": 48}, {"shared_experts": 2}]
)
def test_the_fast_binder_refuses_what_the_reference_refuses(tmp_path, change):
    spec = MoeSpec(moe_config(), "q4_0_4x4", "none", 2)
    arch, tensors, flags = moe_file_parts(spec)
    path = write_vqf(tmp_path / "m.vqf", arch={**arch, **change}, tensors=tensors, flags=flags)
    errors = []
    with open_vqf(path) as vqf:
        for bind in (bind_vqf, lambda v: open_model(v, threads=1)):
            with pytest.raises(WeightfileError) as exc:
                bind(vqf)
            errors.append((type(exc.value), exc.value.rule, exc.value.path, exc.value.offset))
    assert errors[0] == errors[1]


def test_a_short_router_is_refused_alike(tmp_path):
    spec = MoeSpec(moe_config(layers=2), "q8_0_8x8", "none", 2)
    arch, tensors, flags = moe_file_parts(spec)
    tensors = [
        dataclasses.replace(t, rows=t.rows - 1, data=t.data[: -4 * t.cols])
        if t.name == "moe_router" else t
        for t in tensors
    ]  # fmt: skip
    path = write_vqf(tmp_path / "m.vqf", arch=arch, tensors=tensors, flags=flags)
    errors = []
    with open_vqf(path) as vqf:
        for bind in (bind_vqf, lambda v: open_model(v, threads=1)):
            with pytest.raises(WeightfileError) as exc:
                bind(vqf)
            errors.append((type(exc.value), exc.value.rule, exc.value.path, exc.value.offset))
    assert errors[0] == errors[1] and errors[0][1] == "vqf.bind.moe_router"


def test_the_fast_path_reads_only_the_chosen_experts(tmp_path):
    """Every expert no token chooses has its gate, up and down bands overwritten with NaN: the
    fast forward pass still gives the untouched file's bits, so it never computed over them (a
    NaN weight poisons any product it enters, spec/numerics.md §f32-weights)."""
    spec = MoeSpec(moe_config(experts=6, top_k=2, hidden=64), "f32", "none", 11)
    clean = write_moe_file(tmp_path / "clean.vqf", spec)
    tokens = [1, 2, 3]
    with open_vqf(clean) as vqf:
        model = open_model(vqf, threads=1)
        trace = TraceRecorder()
        want = model.forward(tokens, model.new_cache(), trace=trace)
        chosen = {int(e) for e in trace.arrays()["layers.0.moe_experts"].ravel()}
        entries = {e.name: e for e in vqf.entries}
    unchosen = sorted(set(range(6)) - chosen)
    assert unchosen  # 3 tokens choose at most 6 of 6, in practice fewer
    raw = bytearray(clean.read_bytes())
    nan = np.full(1, np.nan, "<f4").tobytes()
    d, ie, ff = 64, 32, 6 * 32
    for e in unchosen:
        for name in ("q8_gate", "q8_up"):  # rows [e·Ie, (e+1)·Ie) of [ff, d]
            start = entries[name].offset + 4 * e * ie * d
            raw[start : start + 4 * ie * d] = nan * (ie * d)
        for r in range(d):  # columns [e·Ie, (e+1)·Ie) of every row of [d, ff]
            start = entries["q8_down"].offset + 4 * (r * ff + e * ie)
            raw[start : start + 4 * ie] = nan * ie
    poisoned = tmp_path / "poisoned.vqf"
    poisoned.write_bytes(bytes(raw))
    with open_vqf(poisoned) as vqf:
        model = open_model(vqf, threads=1)
        got = model.forward(tokens, model.new_cache())
        ref = Qwen3MoeModel(*bind_vqf(vqf))
        assert_same_bits("ref logits", ref.forward(tokens, ref.new_cache()), want)
    assert_same_bits("logits", got, want)


@settings(max_examples=8, deadline=None)
@given(spec=moe_specs(), data=st.data())
def test_a_prompt_cut_into_chunks_gives_the_reference_bits(spec: MoeSpec, data) -> None:
    """The untraced step-by-step forward cuts a long prompt into chunks whose widest projection
    stays under CALL_BUDGET_MACS (so Ctrl-C is honoured between C calls); drawn down to a token
    or a few per chunk, logits and the next decode step are still the reference's
    (spec/numerics.md §batch-invariance)."""
    from weightfile.fast.qwen3 import decoder

    vocab = spec.config.vocab_size
    prompt = data.draw(st.lists(st.integers(0, vocab - 1), min_size=2, max_size=9))
    nxt = data.draw(st.integers(0, vocab - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_moe_file(Path(tmp) / "m.vqf", spec)
        with open_vqf(path) as vqf:
            ref, fast = Qwen3MoeModel(*bind_vqf(vqf)), open_model(vqf, threads=2)
            rc = ref.new_cache()
            want, want_next = ref.forward(prompt, rc), ref.forward([nxt], rc)
            widest = max(
                m.rows * m.cols for lw in fast.weights.layers for m in (lw.q_proj, lw.o_proj)
            )
            most = data.draw(st.integers(1, 4))
            budget, decoder.CALL_BUDGET_MACS = decoder.CALL_BUDGET_MACS, most * widest
            try:
                sizes = [r.stop - r.start for r in fast._step_chunks(len(prompt))]
                assert sum(sizes) == len(prompt) and max(sizes) == min(most, len(prompt))
                cache = fast.new_cache()
                assert_same_bits("chunked", fast.forward(prompt, cache), want)
                assert_same_bits("next", fast.forward([nxt], cache), want_next)
            finally:
                decoder.CALL_BUDGET_MACS = budget
