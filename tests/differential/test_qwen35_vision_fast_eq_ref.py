"""The fast vision tower on a `.ninfer` file's decoded weights equals the reference tower bit for
bit (spec/models.md §qwen35-vision, §vision-variants; spec/numerics.md §vision): every `vision.*`
trace name, as uint32 views, on every kernel path, with 1-3 threads.

The weights are a tiny vision component bound from a bf16 file (tests/strategies/qwen35.py,
the binder of ref/qwen35/vision.py, the entry point fast/qwen3_vl/dense.py). Hypothesis draws
one or two images (grids of 1-3 merge windows a side, so odd and non-square ones; pixel values
at several scales with zeros and extremes) and the family switches: the Qwen3.5 values
(pre-regrouping norm, erf GELU) and the others the tower takes (post-regrouping norm over the
merge window, tanh GELU in the merger), so every switch position is shown equal in both engines.

Then the whole multimodal session of `run --image` (engine fast against engine ref) over drawn
prompts: text before, between and after the images, vision matrices bf16 or q8_g32_fp16, the
prefill and one decode step's logits, the positions and δ.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen35 import (
    TINY_VISION,
    VISION_IDS,
    add_vision,
    random_parameters,
    random_vision_parameters,
    text_file,
    tiny_config,
)
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import each_isa, forced_isa, library, usable_isas
from weightfile.fast.qwen3_vl.dense import fast_tower
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.numerics.matrix import HadamardMatrix, RowStack
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionTower
from weightfile.ref.qwen35.bind import ObjectDecoder, bind_ninfer
from weightfile.ref.qwen35.vision import check_vision, linear, vision_weights

pytestmark = pytest.mark.skipif(library() is None, reason="no C kernels")


@cache
def bound():
    """(config, weights) of the tiny vision component, decoded once."""
    tf = text_file(tiny_config(), random_parameters(tiny_config(), seed=3), "bf16")
    add_vision(tf, dict(TINY_VISION), random_vision_parameters(TINY_VISION, 32, seed=8))
    path = tf.write(Path(tempfile.mkdtemp(prefix="wf-v35-")) / "m.ninfer")
    with open_artifact(path) as nf:
        config, _ = bind_ninfer(nf)
        b = check_vision(nf, config)
        return b.config, vision_weights(b, ObjectDecoder(nf))


def with_switches(post_shuffle: bool, gelu: str):
    """The tower's config and weights with the merger switches set; a post-regrouping norm has
    one weight per merge-window column (4W), drawn here."""
    c, w = bound()
    c = replace(c, merger_postshuffle_norm=post_shuffle, merger_gelu=gelu)
    if post_shuffle:
        rng = np.random.default_rng(4)
        norm = (1 + rng.normal(0, 0.3, c.merged_dim)).astype(np.float32)
        bias = rng.normal(0, 0.3, c.merged_dim).astype(np.float32)
        w = replace(w, merger=replace(w.merger, norm_w=norm, norm_b=bias))
    return c, w


def pixels(rng: np.random.Generator, rows: int, cols: int, scale: float) -> np.ndarray:
    x = rng.normal(0, scale, (rows, cols)).astype(np.float32)
    x[rng.random((rows, cols)) < 0.1] = 0.0
    x[0, 0], x[-1, -1] = np.float32(-1.0), np.float32(1.0)  # the preprocessed extremes
    return x


images = st.lists(
    st.tuples(st.integers(1, 3), st.integers(1, 3), st.sampled_from([1e-3, 1.0, 8.0])),
    min_size=1,
    max_size=2,
)


def trace(tower, ims) -> dict[str, np.ndarray]:
    rec = TraceRecorder()
    tower.forward(ims, rec)
    return rec.arrays()


@settings(max_examples=6, deadline=None)
@given(
    ims=images,
    post_shuffle=st.booleans(),
    gelu=st.sampled_from(["erf", "tanh"]),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_fast_tower_equals_reference(ims, post_shuffle, gelu, seed, data) -> None:
    c, w = with_switches(post_shuffle, gelu)
    rng = np.random.default_rng(seed)
    inputs = [
        VisionInput(pixels(rng, 4 * bh * bw, c.patch_dim, s), (1, 2 * bh, 2 * bw))
        for bh, bw, s in ims
    ]
    want = trace(VisionTower(c, w), inputs)
    assert "vision.merger" in want and not any("deepstack" in k for k in want)
    for _ in each_isa():
        got = trace(fast_tower(c, w, data.draw(st.integers(1, 3))), inputs)
        assert list(got) == list(want)
        for name, v in want.items():
            assert np.array_equal(got[name].view(np.uint32), v.view(np.uint32)), name


# -- Hadamard inputs on the tower ------------------------------------------------------------


@cache
def rotated_bound():
    """(config, weights) of a one-block tower whose MLP is 1024 wide, bound from a bf16 file
    whose fc2 Use carries hadamard_signs (so fc2 is a HadamardMatrix)."""
    vision = dict(TINY_VISION, depth=1, intermediate_size=1024)
    tf = text_file(tiny_config(), random_parameters(tiny_config(), seed=3), "bf16")
    add_vision(tf, vision, random_vision_parameters(vision, 32, seed=9))
    signs = np.where(np.random.default_rng(2).random(1024) < 0.5, -1.0, 1.0).astype(np.float32)
    tf.add_tensor("w.signs", signs, "bf16", "contiguous_le_v1")
    use = next(u for u in tf.uses if u["parameter"] == "vision/layers/0/mlp/fc2")
    use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs"}}
    path = tf.write(Path(tempfile.mkdtemp(prefix="wf-v35h-")) / "m.ninfer")
    with open_artifact(path) as nf:
        config, _ = bind_ninfer(nf)
        b = check_vision(nf, config)
        return b.config, vision_weights(b, ObjectDecoder(nf))


def split_fc2(w):
    """The weights with fc2 a row stack whose halves rotate with different signs (as a block's
    query, key and value do when their Uses carry different signs), the second half unrotated."""
    block = w.blocks[0]
    values, signs = block.fc2.matrix.values, block.fc2.signs
    fc2 = linear([(values[:5], signs), (values[5:9], -signs), (values[9:], None)])
    assert isinstance(fc2, RowStack) and len(fc2.parts) == 3
    return replace(w, blocks=(replace(block, fc2=fc2),))


@settings(max_examples=3, deadline=None)
@given(
    grid=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    scale=st.sampled_from([1e-3, 1.0, 8.0]),
    stacked=st.booleans(),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_fast_tower_with_hadamard_inputs_equals_reference(grid, scale, stacked, seed, data):
    """A tower whose fc2 reads H(signs ∘ x) (spec/numerics.md §hadamard), or a row stack of
    differently rotated parts: every trace name bit for bit on every kernel path, 1-3 threads."""
    c, w = rotated_bound()
    assert isinstance(w.blocks[0].fc2, HadamardMatrix)
    w = split_fc2(w) if stacked else w
    bh, bw = grid
    rng = np.random.default_rng(seed)
    inputs = [VisionInput(pixels(rng, 4 * bh * bw, c.patch_dim, scale), (1, 2 * bh, 2 * bw))]
    want = trace(VisionTower(c, w), inputs)
    for _ in each_isa():
        got = trace(fast_tower(c, w, data.draw(st.integers(1, 3))), inputs)
        assert list(got) == list(want)
        for name, v in want.items():
            assert np.array_equal(got[name].view(np.uint32), v.view(np.uint32)), name


# -- the whole multimodal session: images in prompts ---------------------------------------


@cache
def vl_path(vision_format: str) -> Path:
    """The tiny text model with the tower, its vision matrices in `vision_format`."""
    tf = text_file(tiny_config(), random_parameters(tiny_config(), seed=3), "bf16")
    params = random_vision_parameters(TINY_VISION, 32, seed=8)
    add_vision(tf, dict(TINY_VISION), params, vision_format)
    return tf.write(Path(tempfile.mkdtemp(prefix="wf-v35s-")) / "m.ninfer")


@cache
def session(vision_format: str, engine: str, threads: int):
    from weightfile.backends import backend_named
    from weightfile.frontend.dispatch import load_session

    path = vl_path(vision_format)
    return load_session(path, None, False, backend_named(engine), threads=threads, images=True)


def prompt_of(texts: list[list[int]], grids: list[tuple[int, int]]) -> list[int]:
    """texts[0], then per image <vision_start>, its merged-grid count of pads, <vision_end> and
    the next text."""
    vs, ve, pad = (VISION_IDS[t] for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>"))
    out = list(texts[0])
    for (bh, bw), text in zip(grids, texts[1:], strict=True):
        out += [vs, *[pad] * (bh * bw), ve, *text]
    return out


def run_session(s, tokens: list[int], inputs: list[VisionInput], step: int):
    """(prefill logits, one decode step's logits, positions, δ, trace) of one session."""
    s.model.attach_images(inputs)
    rec, cache_ = TraceRecorder(), s.model.new_cache()
    prefill = s.model.forward(tokens, cache_, trace=rec)
    positions = [list(p) for p in s.model.positions(tokens, inputs, 0)]
    delta = s.model.rope_delta
    decode = s.model.forward([step], cache_)
    return prefill, decode, positions, delta, rec.arrays()


texts = st.lists(st.integers(0, 89), max_size=2)
grids = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=2)


@settings(max_examples=5, deadline=None)
@given(
    grid=grids,
    data=st.data(),
    vision_format=st.sampled_from(["bf16", "q8_g32_fp16"]),
    seed=st.integers(0, 2**16),
    step=st.integers(0, 89),
    isa=st.sampled_from(usable_isas() or ["portable"]),
    threads=st.integers(1, 3),
)
def test_fast_session_equals_reference_over_prompts(
    grid, data, vision_format, seed, step, isa, threads
):
    """Images of 1-3 merge windows a side (odd and non-square grids) between drawn text, through
    the session `run --image` builds (engine fast: the fast tower and the fast codecs on a drawn
    kernel path and 1-3 threads) against engine ref: every logits row of the prefill and one
    decode step, the MRoPE positions and δ, every traced activation, as uint32 views. (Every
    path on every draw is the tower property above; the text forward of a session is the
    costly part, so here the path is drawn.)"""
    rng = np.random.default_rng(seed)
    tokens = prompt_of([data.draw(texts) for _ in range(len(grid) + 1)], grid)
    inputs = [
        VisionInput(pixels(rng, 4 * bh * bw, 24, 1.0), (1, 2 * bh, 2 * bw)) for bh, bw in grid
    ]
    want = run_session(session(vision_format, "ref", 1), tokens, inputs, step)
    assert "vision.merger" in want[4] and np.isfinite(want[0]).all()
    with forced_isa(isa):
        got = run_session(session(vision_format, "fast", threads), tokens, inputs, step)
    for g, w in zip(got[:2], want[:2], strict=True):
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32))
    assert got[2:4] == want[2:4]
    assert list(got[4]) == list(want[4])
    for name, v in want[4].items():
        assert np.array_equal(got[4][name].view(np.uint32), v.view(np.uint32)), name
