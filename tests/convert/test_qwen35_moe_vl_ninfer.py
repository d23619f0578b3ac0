"""Qwen3.5-MoE with images from a `.ninfer` file against transformers (spec/models.md
§qwen35-vision, spec/ninfer3.md §qwen35-vision-names; the MoE blocks of spec/ninfer3.md
§qwen35-names).

A tiny seeded `Qwen3_5MoeForConditionalGeneration` (tests/strategies/qwen35_vl_checkpoint.py
with `moe`: four routed experts, top 2, a shared expert; the same 2-block tower; every weight a
bf16 value) is imported as bf16, so the file holds exactly transformers' weights and its vision
config says `qwen3_5_moe_vision`. The session of `run` / `trace --image` prepares a 24×40 picture
(15 image tokens) in a prompt with text on both sides. Compared with transformers float32 eager:
the merger rows within 1e-6, the MRoPE positions and δ equal to `get_rope_index`, the logits
within 1e-5 with the same argmax at every position; the routed experts are checked to differ
between tokens, so the comparison reaches more than one expert.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_vl_checkpoint import PROCESSOR, ids, image_array, torch, write_checkpoint

from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.frontend.dispatch import load_session
from weightfile.frontend.image import image_prompt_ids
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact

LOGITS_BOUND = 1e-5  # the bounds
MERGER_BOUND = 1e-6
PIXELS = (PROCESSOR["min_pixels"], PROCESSOR["max_pixels"])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("hf35moevl")
    hf = write_checkpoint(folder, seed=12, moe=True)
    path = import_checkpoint(folder, folder / "m.ninfer", fmt="bf16")[0]
    Image.fromarray(image_array(seed=9)).save(folder / "img.png")
    t = ids()
    prompt = f"5,17,{t['<|vision_start|>']},{t['<|image_pad|>']},{t['<|vision_end|>']},40,41,9"
    s = load_session(path, None, False, images=True)
    tokens = image_prompt_ids(s, None, prompt, False, [folder / "img.png"], pixels=PIXELS)
    (image,) = s.model.pending_images
    rec = TraceRecorder()
    logits = s.model.forward(tokens, s.model.new_cache(), trace=rec)
    ids_t = torch.tensor([tokens])
    pv = torch.from_numpy(np.asarray(image.pixel_values))
    grid = torch.tensor([list(image.grid_thw)])
    kinds = (ids_t == t["<|image_pad|>"]).int()
    experts: list = []
    hook = hf.model.language_model.layers[1].mlp.gate.register_forward_hook(
        lambda _m, _a, out: experts.append(np.sort(out[2].numpy(), axis=1))
    )
    with torch.no_grad():
        vis = hf.model.visual(pv, grid_thw=grid)
        out = hf(input_ids=ids_t, pixel_values=pv, image_grid_thw=grid, mm_token_type_ids=kinds)
    hook.remove()
    hf_pos, hf_delta = hf.model.get_rope_index(ids_t, kinds, grid)
    with open_artifact(path) as nf:
        vision_type = nf.directory.components["vision"].config["model_type"]
    return dict(
        s=s, tokens=tokens, logits=logits, trace=rec.arrays(), vis=vis, experts=experts,
        hf_logits=out.logits[0].numpy(), hf_pos=hf_pos[:, 0].T.tolist(), image=image,
        hf_delta=int(hf_delta.reshape(-1)[0]), vision_type=vision_type,
    )  # fmt: skip


def test_the_file_is_the_moe_pair(run) -> None:
    assert list(run["s"].model.config.architectures) == ["Qwen3_5MoeForCausalLM"]
    assert run["vision_type"] == "qwen3_5_moe_vision"
    t = ids()
    img, vs, ve = t["<|image_pad|>"], t["<|vision_start|>"], t["<|vision_end|>"]
    assert run["tokens"] == [5, 17, vs, *[img] * 15, ve, 40, 41, 9]


def test_merger_rows_within_1e_6(run) -> None:
    merger = run["trace"]["vision.merger"]
    want = run["vis"].pooler_output.numpy()
    assert merger.shape == want.shape == (15, 64)
    assert np.abs(merger - want).max() <= MERGER_BOUND
    assert np.abs(want).max() > 0.1


def test_positions_equal_get_rope_index(run) -> None:
    model = run["s"].model
    assert [list(p) for p in model.positions(run["tokens"], [run["image"]], 0)] == run["hf_pos"]
    # text 0..2, the 3x5 merged grid at t 3 (h 3..5, w 3..7), text 8..11: δ = 12 - 22 tokens
    assert model.rope_delta == run["hf_delta"] == -10


def test_logits_within_1e_5_argmax_equal(run) -> None:
    got, want = run["logits"], run["hf_logits"]
    assert got.shape == want.shape == (len(run["tokens"]), run["s"].model.config.vocab_size)
    assert np.abs(got.astype(np.float64) - want).max() <= LOGITS_BOUND
    assert np.array_equal(got.argmax(-1), want.argmax(-1))
    assert np.abs(want).max() > 0.1
    (chosen,) = run["experts"]  # layer 1's top-2 of 4 at each of the 22 tokens
    assert chosen.shape == (22, 2) and len({tuple(r) for r in chosen}) > 1
