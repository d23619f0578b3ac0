"""Qwen3.5 with images from a `.ninfer` file against transformers (spec/models.md §qwen35-vision,
spec/ninfer3.md §qwen35-vision-names).

A tiny seeded `Qwen3_5ForConditionalGeneration` (tests/strategies/qwen35_vl_checkpoint.py, every
weight a bf16 value) is imported as bf16, so the file holds exactly transformers' weights; the
session `run` / `trace --image` build (weightfile/frontend) prepares a 24×40 picture (a 6×10
patch grid, 15 image tokens) and runs a prompt with text on both sides. Compared with transformers
float32 eager: the processor's pixel values bit for bit, the merger rows within 1e-6, the MRoPE
positions and δ equal to `get_rope_index`, the logits within 1e-5 with the same argmax
everywhere. Then: decode after an image prefill equals one whole prefill bit for bit, and the
fast tower gives the reference tower's bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_vl_checkpoint import (
    PROCESSOR,
    ids,
    image_array,
    image_processor,
    torch,
    write_checkpoint,
)

from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.frontend.dispatch import load_session
from weightfile.frontend.image import image_prompt_ids
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3_vl.vision import VisionInput

LOGITS_BOUND = 1e-5  # the bound
MERGER_BOUND = 1e-6
PIXELS = (PROCESSOR["min_pixels"], PROCESSOR["max_pixels"])


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("hf35vl")
    hf = write_checkpoint(folder, seed=11)
    path = import_checkpoint(folder, folder / "m.ninfer", fmt="bf16")[0]
    Image.fromarray(image_array()).save(folder / "img.png")
    return hf, path, folder / "img.png"


def prompt() -> str:
    t = ids()
    return f"5,17,{t['<|vision_start|>']},{t['<|image_pad|>']},{t['<|vision_end|>']},40,41,9"


def ours(path, img, engine: str = "ref"):
    """(expanded ids, the prepared image, logits, trace) through the session of run/trace."""
    from weightfile.backends import backend_named

    s = load_session(path, None, False, backend_named(engine), images=True)
    tokens = image_prompt_ids(s, None, prompt(), False, [img], pixels=PIXELS)
    (image,) = s.model.pending_images
    rec = TraceRecorder()
    logits = s.model.forward(tokens, s.model.new_cache(), trace=rec)
    return s, tokens, image, logits, rec.arrays()


@pytest.fixture(scope="module")
def run(model):
    hf, path, img = model
    s, tokens, image, logits, trace = ours(path, img)
    ids_t = torch.tensor([tokens])
    pv = torch.from_numpy(np.asarray(image.pixel_values))
    grid = torch.tensor([list(image.grid_thw)])
    kinds = (ids_t == ids()["<|image_pad|>"]).int()
    with torch.no_grad():
        vis = hf.model.visual(pv, grid_thw=grid)
        out = hf(input_ids=ids_t, pixel_values=pv, image_grid_thw=grid, mm_token_type_ids=kinds)
    hf_pos, hf_delta = hf.model.get_rope_index(ids_t, kinds, grid)
    return dict(
        s=s, tokens=tokens, image=image, logits=logits, trace=trace, vis=vis,
        hf_logits=out.logits[0].numpy(), hf_pos=hf_pos[:, 0].T.tolist(),
        hf_delta=int(hf_delta.reshape(-1)[0]),
    )  # fmt: skip


def test_pixel_values_equal_the_processor(run) -> None:
    from PIL import Image

    want = image_processor()(images=[Image.fromarray(image_array())], return_tensors="np")
    assert want["image_grid_thw"].tolist() == [list(run["image"].grid_thw)] == [[1, 6, 10]]
    got = np.asarray(run["image"].pixel_values)
    assert np.array_equal(got.view(np.uint32), want["pixel_values"].view(np.uint32))


def test_placeholder_expanded_to_the_merged_grid(run) -> None:
    t = ids()
    img, vs, ve = t["<|image_pad|>"], t["<|vision_start|>"], t["<|vision_end|>"]
    assert run["tokens"] == [5, 17, vs, *[img] * 15, ve, 40, 41, 9]


def test_merger_rows_within_1e_6(run) -> None:
    merger = run["trace"]["vision.merger"]
    want = run["vis"].pooler_output.numpy()
    assert merger.shape == want.shape == (15, 64)
    assert np.abs(merger - want).max() <= MERGER_BOUND
    assert np.abs(want).max() > 0.1  # rows this large would show a wrong tower
    assert not any(k.startswith("vision.deepstack") for k in run["trace"])
    last = run["trace"]["vision.blocks.1.mlp_residual"]
    assert np.abs(run["vis"].last_hidden_state.numpy() - last).max() <= MERGER_BOUND


def test_positions_equal_get_rope_index(run) -> None:
    model = run["s"].model
    assert [list(p) for p in model.positions(run["tokens"], [run["image"]], 0)] == run["hf_pos"]
    # text 0..2, the 3x5 merged grid at t 3 (h 3..5, w 3..7), text 8..11: δ = 11 + 1 - 22 tokens
    assert model.rope_delta == run["hf_delta"] == -10


def test_logits_within_1e_5_argmax_equal(run) -> None:
    got, want = run["logits"], run["hf_logits"]
    assert got.shape == want.shape == (len(run["tokens"]), run["s"].model.config.vocab_size)
    assert np.abs(got.astype(np.float64) - want).max() <= LOGITS_BOUND
    assert np.array_equal(got.argmax(-1), want.argmax(-1))
    assert np.abs(want).max() > 0.1


def test_decode_after_an_image_prefill_equals_one_prefill(model, run) -> None:
    """The decode step's MRoPE ids come from δ; counted from the token index they would differ."""
    img = model[2]
    s = run["s"]
    image_prompt_ids(s, None, prompt(), False, [img], pixels=PIXELS)
    cache = s.model.new_cache()
    first = s.model.forward(run["tokens"], cache)
    step = s.model.forward([7], cache)[0]
    image_prompt_ids(s, None, prompt(), False, [img], pixels=PIXELS)
    whole = s.model.forward([*run["tokens"], 7], s.model.new_cache())
    assert np.array_equal(whole[:-1].view(np.uint32), first.view(np.uint32))
    assert np.array_equal(whole[-1].view(np.uint32), step.view(np.uint32))


def test_engine_fast_tower_gives_the_reference_bits(model, run) -> None:
    from weightfile.fast._native import library
    from weightfile.fast.qwen3_vl import FastVisionTower

    if library() is None:
        pytest.skip("no C compiler: engine fast runs the reference")
    _, path, img = model
    s, tokens, _, logits, trace = ours(path, img, "fast")
    assert isinstance(s.model.vision, FastVisionTower)
    assert s.note is not None and "vision tower" in s.note
    assert tokens == run["tokens"]
    for name, want in run["trace"].items():
        assert np.array_equal(trace[name].view(np.uint32), want.view(np.uint32)), name
    assert np.array_equal(logits.view(np.uint32), run["logits"].view(np.uint32))


def test_trace_image_on_ninfer(model, run, tmp_path) -> None:
    """`weightfile trace --image` with an `<image>` marker: the processor's pixel values, the
    expanded ids, the tower's `vision.*` names and the reference logits of the same prompt."""
    from weightfile.cli import main

    _, path, img = model
    out = tmp_path / "t.npz"
    px = ["--min-pixels", str(PIXELS[0]), "--max-pixels", str(PIXELS[1])]
    argv = ["trace", str(path), "--prompt", "ab <image> cd", "--image", str(img), *px]
    assert main([*argv, "--out", str(out)]) == 0
    t = dict(np.load(out))
    want = np.asarray(run["image"].pixel_values)
    assert np.array_equal(t["pixel_values"].view(np.uint32), want.view(np.uint32))
    assert t["image_grid_thw"].tolist() == [[1, 6, 10]]
    image_rows = t["input_ids"] == ids()["<|image_pad|>"]
    assert image_rows.sum() == 15 and t["vision.merger"].shape == (15, 64)
    assert "vision.blocks.1.mlp_residual" in t and not any("deepstack" in k for k in t)
    # the merger rows do not depend on the text around them
    assert np.array_equal(
        t["vision.merger"].view(np.uint32), run["trace"]["vision.merger"].view(np.uint32)
    )


def test_default_import_writes_the_official_vision_formats(model, tmp_path) -> None:
    from weightfile.ref.ninfer3.read import open_artifact

    folder = model[1].parent
    path = import_checkpoint(folder, tmp_path / "o.ninfer")[0]
    want = {
        "v.patch_embedding": "q6_g64_fp16",
        "v.layers/0/attention/query+key+value": "q4_g64_fp16",
        "v.layers/0/attention/query_bias+key_bias+value_bias": "bf16",
        "v.layers/1/attention/output": "q5_g64_fp16",
        "v.layers/1/mlp/fc1": "q4_g64_fp16",
        "v.layers/1/mlp/fc2": "q5_g64_fp16",
        "v.merger/fc1": "q8_g32_fp16",
        "v.merger/fc2": "q8_g32_fp16",
        "v.position_embedding": "bf16",
    }
    with open_artifact(path) as nf:
        got = {o: nf.directory.objects_by_id[o].format for o in want}
        vision = nf.directory.components["vision"]
        text_formats = {
            o.format for o in nf.directory.objects_by_id.values() if o.id.startswith("w.")
        }
    assert got == want
    assert text_formats <= {"bf16", "fp32"}  # text matrices stay bf16 without --format
    assert vision.target == "text" and vision.config["model_type"] == "qwen3_5_vision"
    assert set(vision.resources) == {"preprocessor_config.json", "video_preprocessor_config.json"}


def test_two_images_positions_equal_get_rope_index(model, run) -> None:
    """Two images of different grids in one prompt, text between and after: the second image
    starts after the first one's largest id, and δ counts both (spec/models.md §qwen3-vl (b))."""
    hf = model[0]
    t = ids()
    vs, img, ve = t["<|vision_start|>"], t["<|image_pad|>"], t["<|vision_end|>"]
    grids = [(1, 6, 10), (1, 4, 2)]
    tokens = [5, vs, *[img] * 15, ve, 7, 8, vs, *[img] * 2, ve, 9]
    images = [VisionInput(np.zeros((g[1] * g[2], 96), np.float32), g) for g in grids]
    model_ = run["s"].model
    ours = [list(p) for p in model_.positions(tokens, images, 0)]
    ids_t = torch.tensor([tokens])
    hf_pos, hf_delta = hf.model.get_rope_index(
        ids_t, (ids_t == img).int(), torch.tensor([list(g) for g in grids])
    )
    assert ours == hf_pos[:, 0].T.tolist()
    assert model_.rope_delta == int(hf_delta.reshape(-1)[0])
    # by hand: the first image starts at p = 2 and moves p to 2 + max(3, 5) = 7; <ve>, 7, 8, <vs>
    # take 7..10; the second image's first token (row 0, column 0) is (11, 11, 11)
    assert ours[21] == [11, 11, 11]
