"""The fast vision tower on a `.ninfer` file's decoded weights equals the reference tower bit for
bit (spec/models.md §qwen35-vision, §vision-variants; spec/numerics.md §vision): every `vision.*`
trace name, as uint32 views, on every kernel path, with 1-3 threads.

The weights are a tiny vision component bound from a bf16 file (tests/strategies/qwen35.py,
the binder of ref/qwen35/vision.py, the entry point fast/qwen3_vl/dense.py). Hypothesis draws
one or two images (grids of 2×2 merge windows, pixel values at several scales with zeros and
extremes) and the family switches: the Qwen3.5 values (pre-regrouping norm, erf GELU) and the
others the tower takes (post-regrouping norm over the merge window, tanh GELU in the merger), so
every switch position is shown equal in both engines.
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
    add_vision,
    random_parameters,
    random_vision_parameters,
    text_file,
    tiny_config,
)
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import each_isa, library
from weightfile.fast.qwen3_vl.dense import fast_tower
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionTower
from weightfile.ref.qwen35.bind import ObjectDecoder, bind_ninfer
from weightfile.ref.qwen35.vision import check_vision, vision_weights

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
    st.tuples(st.integers(1, 2), st.integers(1, 2), st.sampled_from([1e-3, 1.0, 8.0])),
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
