"""The Qwen3-VL reference against transformers (spec/numerics.md §vision, spec/models.md §qwen3-vl).

A tiny seeded Qwen3VLForConditionalGeneration (tests/strategies/qwen3_vl.py) is imported to a q8_0
VISION VQF and run by the reference under `f32_weights`; transformers float32 eager runs the same
prompt and image on the file's de-quantized weights (the `v_q8_*` block matrices and the text
projections are Q8_0, the embedding F16). The budget is 1e-5 absolute on every compared output:
the two differ only by float rounding (summation order, libm), measured 8.6e-8 (vision) and 2.7e-7
(logits). Against the original, unquantized weights the file's Q8_0 rounding dominates; the
bound asserted is 2 % of the largest logit (measured 5.9e-3 of logits up to 1.07, 0.55 %).
The pixel values, DeepStack and the MRoPE positions are checked on their own, so that a mistake in
one cannot hide in the logits' tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen3_vl import (
    IMAGE_ID,
    MAX_PIXELS,
    MIN_PIXELS,
    PROMPT,
    image_array,
    load_hf,
    shared_checkpoint,
    shared_vqf,
    torch,
)

from weightfile.frontend.image import ImageSettings, preprocess_hf
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.bind_vqf import bind_vl_vqf
from weightfile.ref.qwen3_vl.model import Qwen3VLModel, expand_image_tokens
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

TOL = 1e-5
LOGITS_ORIGINAL_BOUND = 0.02  # of the largest |logit|, for the original (unquantized) weights


def dequantized(m) -> np.ndarray:
    if isinstance(m, QuantMatrix):
        scales = m.scale_bits.view(np.float16).astype(np.float32)
        return m.codes.astype(np.float32) * np.repeat(scales, 32, axis=1)
    return m.values


@pytest.fixture(scope="module")
def run():
    """Import, bind, preprocess and run the reference once; transformers on both weight sets."""
    from PIL import Image

    folder, path = shared_checkpoint(), shared_vqf()
    with open_vqf(path) as f:
        tc, tw, vc, vw, ids = bind_vl_vqf(f)
    s = ImageSettings(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    im = preprocess_hf(Image.fromarray(image_array()), s)
    tokens = expand_image_tokens(PROMPT, ids.image, [im.n_tokens])
    profile = CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS)
    model = Qwen3VLModel(tc, tw, vc, vw, ids, profile)
    rec = TraceRecorder()
    images = [VisionInput(im.pixel_values, im.grid_thw)]
    positions = model.positions(tokens, images, 0)
    logits = model.forward(tokens, model.new_cache(), trace=rec, images=images)

    original = load_hf(folder)
    deq = load_hf(folder)
    sd = deq.state_dict()
    lm = "model.language_model."
    new = {lm + "embed_tokens.weight": tw.embed}
    names = {"q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj",
             "v_proj": "self_attn.v_proj", "o_proj": "self_attn.o_proj",
             "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj",
             "down_proj": "mlp.down_proj"}  # fmt: skip
    for i, lw in enumerate(tw.layers):
        for field, hf in names.items():
            new[f"{lm}layers.{i}.{hf}.weight"] = dequantized(getattr(lw, field))
    for i, b in enumerate(vw.blocks):
        v = f"model.visual.blocks.{i}."
        new[v + "attn.qkv.weight"] = dequantized(b.qkv)
        new[v + "attn.proj.weight"] = dequantized(b.proj)
        new[v + "mlp.linear_fc1.weight"] = dequantized(b.fc1)
        new[v + "mlp.linear_fc2.weight"] = dequantized(b.fc2)[:, : vc.intermediate_size]
    with torch.no_grad():
        for k, val in new.items():
            sd[k].copy_(torch.from_numpy(np.ascontiguousarray(val)))
        # the file's lm_head is q8_lm, the quantized copy of the tied embedding
        deq.lm_head.weight = torch.nn.Parameter(torch.from_numpy(dequantized(tw.lm_head)))

    ids_t = torch.tensor([tokens])
    pv, grid = torch.from_numpy(im.pixel_values), torch.tensor([list(im.grid_thw)])
    kinds = (ids_t == IMAGE_ID).int()
    outs = {}
    for name, hf in (("deq", deq), ("orig", original)):
        with torch.no_grad():
            vis = hf.model.visual(pv, grid_thw=grid)
            out = hf(input_ids=ids_t, pixel_values=pv, image_grid_thw=grid, mm_token_type_ids=kinds)
        outs[name] = (vis, out.logits[0].numpy())
    hf_pos, hf_delta = deq.model.get_rope_index(ids_t, kinds, grid)
    return dict(
        folder=folder, im=im, tokens=tokens, trace=rec.arrays(), logits=logits, outs=outs,
        positions=positions, delta=model.rope_delta, hf_pos=hf_pos[:, 0].T.tolist(),
        hf_delta=int(hf_delta[0, 0]), n_ds=len(vc.deepstack_visual_indexes),
    )  # fmt: skip


def test_pixel_values_equal_the_processor(run) -> None:
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    proc = Qwen2VLImageProcessorPil(
        patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3,
        image_std=[0.5] * 3, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS,
    )  # fmt: skip
    want = proc(images=[Image.fromarray(image_array())], return_tensors="np")
    assert list(want["image_grid_thw"][0]) == list(run["im"].grid_thw) == [1, 4, 6]
    got = run["im"].pixel_values
    assert np.array_equal(want["pixel_values"].view(np.uint32), got.view(np.uint32))


def test_vision_outputs_within_budget_on_dequantized_weights(run) -> None:
    vis, _ = run["outs"]["deq"]
    merger = run["trace"]["vision.merger"]
    assert merger.shape == (6, 64)
    assert np.abs(vis.pooler_output.numpy() - merger).max() <= TOL
    last = run["trace"]["vision.blocks.2.mlp_residual"]
    assert np.abs(vis.last_hidden_state.numpy() - last).max() <= TOL


def test_deepstack_features_and_injection(run) -> None:
    """Each feature against transformers; then its addition at exactly the image rows after text
    layer j, bit for bit h ⊕ f (spec/numerics.md §vision-merge), and nowhere else."""
    vis, _ = run["outs"]["deq"]
    tr, tokens = run["trace"], np.array(run["tokens"])
    assert len(vis.deepstack_features) == run["n_ds"] == 2
    image_rows = np.flatnonzero(tokens == IMAGE_ID)
    for j, feature in enumerate(vis.deepstack_features):
        ours = tr[f"vision.deepstack.{j}"]
        assert np.abs(feature.numpy() - ours).max() <= TOL
        assert np.abs(ours).max() > 100 * TOL  # a feature this small could hide a wrong one
        before, after = tr[f"layers.{j}.ffn_residual"], tr[f"layers.{j}.deepstack"]
        want = before.copy()
        want[image_rows] = before[image_rows] + ours
        assert np.array_equal(after.view(np.uint32), want.view(np.uint32))
    assert f"layers.{run['n_ds']}.deepstack" not in tr


def test_positions_equal_get_rope_index(run) -> None:
    assert [list(p) for p in run["positions"]] == run["hf_pos"]
    assert run["delta"] == run["hf_delta"] == -3
    # the spec's shape (spec/models.md §qwen3-vl (b)): text 0..2, the 2x3 image at 3, text from 6
    image = [(3, 3, 3), (3, 3, 4), (3, 3, 5), (3, 4, 3), (3, 4, 4), (3, 4, 5)]
    assert run["positions"][3:9] == image
    assert run["positions"][9] == (6, 6, 6)


def test_logits_within_budget_and_argmax_equal(run) -> None:
    _, deq = run["outs"]["deq"]
    ours = run["logits"]
    assert ours.shape == (len(run["tokens"]), 256)
    assert np.abs(deq - ours).max() <= TOL
    assert np.array_equal(deq.argmax(-1), ours.argmax(-1))
    _, orig = run["outs"]["orig"]
    assert np.abs(orig - ours).max() <= LOGITS_ORIGINAL_BOUND * np.abs(orig).max()
