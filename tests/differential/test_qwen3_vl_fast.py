"""The fast Qwen3-VL forward pass equals the reference bit for bit (spec/models.md §qwen3-vl,
spec/numerics.md §vision): every traced name (vision tower, mergers, DeepStack, text layers) and the
logits, as uint32 views, for a multimodal prefill and a decode step after it, on every kernel
path, with 1-3 threads, in both quantized modes.

Two tiny imported files (the importer on seeded Qwen3VLForConditionalGeneration checkpoints):
A is tests/strategies/qwen3_vl.py's (q8_0 legacy text, head dim 16, Iv 48 padded to 64, a 4×4
position table, DeepStack [0, 2]); B has q4_0 tiled text, head dim 32 (the SIMD attention
path), Iv 40 padded to 64, a 3×3 table and DeepStack [1]. Hypothesis draws the images (one or
two, non-square grids of 2×2 merge blocks, pixel values at several scales with zeros and
extremes), the text around them and the decode token. Binding errors are the reference's.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen3_vl import IMAGE_ID, VE_ID, VS_ID, save_checkpoint, shared_vqf
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.families.qwen3_vl.to_vqf import import_vl_checkpoint
from weightfile.fast._native import each_isa, library
from weightfile.fast.backend import FAST
from weightfile.fast.qwen3_vl import open_model
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3_vl.bind_vqf import bind_family
from weightfile.ref.qwen3_vl.model import Qwen3VLModel
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import WeightfileError
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

pytestmark = pytest.mark.skipif(library() is None, reason="no C kernels")

B_VISION = dict(
    depth=2, hidden_size=64, num_heads=2, intermediate_size=40, num_position_embeddings=9,
    deepstack_visual_indexes=[1],
)  # fmt: skip


@pytest.fixture(scope="module")
def files():
    root = Path(tempfile.mkdtemp(prefix="wf-vlfast-"))
    b = root / "b.vqf"
    import_vl_checkpoint(
        save_checkpoint(root / "hf-b", seed=3, **B_VISION), b, qtype="q4_0", layout="tiled",
        backend=FAST,
    )  # fmt: skip
    out = {}
    for key, path in (("a", shared_vqf()), ("b", b)):
        vqf = open_vqf(path)
        out[key] = (vqf, bind_family(vqf))
    yield out
    for vqf, _ in out.values():
        vqf.close()
    shutil.rmtree(root, ignore_errors=True)


def assert_same_bits(name: str, got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape, name
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, f"{name}: {bad.size} elements differ, first at {bad[0]}"


@st.composite
def images(draw, patch_dim: int) -> list[VisionInput]:
    out = []
    for _ in range(draw(st.integers(1, 2))):
        gh, gw = draw(st.sampled_from([(2, 2), (2, 4), (4, 2), (4, 4)]))
        seed = draw(st.integers(0, 2**32 - 1))
        scale = draw(st.sampled_from([1e-3, 1.0, 30.0]))
        rng = np.random.default_rng(seed)
        pv = (rng.standard_normal((gh * gw, patch_dim)) * scale).astype(np.float32)
        pv[rng.random(pv.shape) < 0.05] = 0.0
        pv[rng.random(pv.shape) < 0.01] = np.float32(draw(st.sampled_from([1e4, -1e4, 1e-40])))
        out.append(VisionInput(pv, (1, gh, gw)))
    return out


def run(model, ids, decode):
    cache, rec = model.new_cache(), TraceRecorder()
    logits = model.forward(ids, cache, trace=rec)
    step = model.forward([decode], cache)
    return rec.arrays(), logits, step


@settings(max_examples=4, deadline=None)
@given(
    key=st.sampled_from(["a", "b"]),
    mode=st.sampled_from(list(QuantizedMatmul)),
    data=st.data(),
)
def test_fast_vl_forward_equals_ref(files, key, mode, data) -> None:
    vqf, (config, (tw, vw)) = files[key]
    ims = data.draw(images(config.vision.patch_dim))
    vocab = config.text.vocab_size
    text = st.lists(st.integers(0, 200), max_size=3)
    ids = data.draw(text)
    for im in ims:
        n = im.grid_thw[1] * im.grid_thw[2] // 4
        ids += [VS_ID, *[IMAGE_ID] * n, VE_ID, *data.draw(text)]
    decode = data.draw(st.integers(0, vocab - 1))
    profile = CANONICAL.with_quantized_matmul(mode)
    ref = Qwen3VLModel(config.text, tw, config.vision, vw, config.ids, profile)
    ref.attach_images(ims)
    want, want_logits, want_step = run(ref, ids, decode)
    assert "vision.merger" in want and "layers.0.deepstack" in want  # both files: ds >= 1
    for _ in each_isa():
        threads = data.draw(st.integers(1, 3))
        fast = open_model(vqf, threads=threads, profile=profile)
        fast.attach_images(ims)
        got, logits, step = run(fast, ids, decode)
        assert list(got) == list(want)  # the same names in the same order
        for name in want:
            assert_same_bits(name, got[name], want[name])
        assert_same_bits("logits", logits, want_logits)
        assert_same_bits("decode step", step, want_step)


def test_text_only_prompt_takes_the_one_call_path(files) -> None:
    """Without images the fast model is FastQwen3Model's forward (its one-C-call stack), and
    its logits are still the reference's."""
    vqf, (config, (tw, vw)) = files["a"]
    ref = Qwen3VLModel(config.text, tw, config.vision, vw, config.ids)
    fast = open_model(vqf)
    assert fast.text._layers  # the one-call path is available
    ids = [1, 5, 9, 200]
    assert_same_bits(
        "logits", fast.forward(ids, fast.new_cache()), ref.forward(ids, ref.new_cache())
    )


def test_binding_errors_are_the_references(files, tmp_path) -> None:
    """A non-zero fc2 padding code (spec/vqf.md §vision-tensors) is `vqf.bind.vision_padding` from
    both."""
    vqf, _ = files["a"]
    e = vqf.entry("v_q8_fc2")
    data = bytearray(Path(shared_vqf()).read_bytes())
    # Q8_0 block 1 of row 0 (an f16 scale, then 32 codes) holds columns 32..63; column 50 is
    # padding (Iv 48)
    data[e.offset + 34 + 2 + 18] = 1
    bad = tmp_path / "bad.vqf"
    bad.write_bytes(bytes(data))
    errors = []
    for bind in (bind_family, open_model):
        with open_vqf(bad) as f, pytest.raises(WeightfileError) as err:
            bind(f)
        errors.append((type(err.value), err.value.rule, err.value.path))
    assert errors[0] == errors[1] and errors[0][1] == "vqf.bind.vision_padding"


def test_trace_engine_fast_is_engine_ref(tmp_path) -> None:
    """`trace --image --engine fast` runs fast/qwen3_vl (no note) and saves the reference's
    arrays, name for name and bit for bit."""
    from PIL import Image
    from strategies.qwen3_vl import MAX_PIXELS, MIN_PIXELS, image_array

    from weightfile.cli import main
    from weightfile.fast.qwen3_vl import FastQwen3VLModel
    from weightfile.frontend.dispatch import load_session

    s = load_session(shared_vqf(), None, False, backend=FAST)
    assert isinstance(s.model, FastQwen3VLModel) and s.note is None
    Image.fromarray(image_array()).save(tmp_path / "i.png")
    base = ["trace", str(shared_vqf()), "--token-ids", f"1,{VS_ID},{IMAGE_ID},{VE_ID},3"]
    base += ["--image", str(tmp_path / "i.png"), "--min-pixels", str(MIN_PIXELS)]
    base += ["--max-pixels", str(MAX_PIXELS)]
    got = {}
    for engine in ("ref", "fast"):
        assert main([*base, "--engine", engine, "--out", str(tmp_path / f"{engine}.npz")]) == 0
        got[engine] = dict(np.load(tmp_path / f"{engine}.npz"))
    assert list(got["fast"]) == list(got["ref"]) and "vision.blocks.2.gelu" in got["ref"]
    for name, want in got["ref"].items():
        assert np.array_equal(got["fast"][name].view(np.uint8), want.view(np.uint8)), name
