"""`weightfile run` / `trace` with `--image` on an imported tiny Qwen3-VL (spec/models.md §qwen3-vl
(c)): the trace's pixel values are the processor's, the placeholder is expanded as the processor
expands it, decoding after an image prefill continues the image's positions, and wrong image
counts, unreadable images and images for a text-only model are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen3_vl import (
    IMAGE_ID,
    MAX_PIXELS,
    MIN_PIXELS,
    VE_ID,
    VS_ID,
    image_array,
    shared_vqf,
)

from weightfile.cli import main

PIXELS = ["--min-pixels", str(MIN_PIXELS), "--max-pixels", str(MAX_PIXELS)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("vl_cli")
    Image.fromarray(image_array()).save(root / "img.png")
    return shared_vqf(), root / "img.png"


def trace(model, tmp_path, ids: str, *extra: str) -> dict:
    path, img = model
    out = tmp_path / "t.npz"
    argv = ["trace", str(path), "--token-ids", ids, "--image", str(img), *PIXELS]
    assert main([*argv, "--out", str(out), *extra]) == 0
    return dict(np.load(out))


def test_trace_image_pixel_values_and_expansion(model, tmp_path) -> None:
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    t = trace(model, tmp_path, f"1,2,{VS_ID},{IMAGE_ID},{VE_ID},3,4")
    proc = Qwen2VLImageProcessorPil(
        patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3,
        image_std=[0.5] * 3, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS,
    )  # fmt: skip
    want = proc(images=[Image.fromarray(image_array())], return_tensors="np")
    assert np.array_equal(t["pixel_values"].view(np.uint32), want["pixel_values"].view(np.uint32))
    assert t["image_grid_thw"].tolist() == want["image_grid_thw"].tolist() == [[1, 4, 6]]
    # one placeholder -> gh·gw/4 = 6 copies, the processor's expansion
    assert t["input_ids"].tolist() == [1, 2, VS_ID, *[IMAGE_ID] * 6, VE_ID, 3, 4]
    assert t["vision.merger"].shape == (6, 64) and t["logits"].shape == (12, 256)
    assert "layers.1.deepstack" in t and "layers.2.deepstack" not in t


def test_decode_after_an_image_continues_its_positions(model, tmp_path) -> None:
    """Prefill [prompt, x] at once == prefill prompt, then x as a decode step (spec/numerics.md
    §batch-invariance): the decode step's MRoPE ids come from δ (spec/models.md §qwen3-vl (b)), so a
    text position counted from the token index instead would change its logits."""
    from weightfile.frontend.dispatch import load_session
    from weightfile.frontend.image import image_prompt_ids

    path, img = model
    s = load_session(path, None, False)
    pixels = (MIN_PIXELS, MAX_PIXELS)
    ids = image_prompt_ids(s, None, f"1,{IMAGE_ID},5", False, [img], pixels=pixels)
    cache = s.model.new_cache()
    first = s.model.forward(ids, cache)
    step = s.model.forward([7], cache)[0]
    image_prompt_ids(s, None, f"1,{IMAGE_ID},5", False, [img], pixels=pixels)  # attach again
    whole = s.model.forward([*ids, 7], s.model.new_cache())
    assert np.array_equal(whole[:-1].view(np.uint32), first.view(np.uint32))
    assert np.array_equal(whole[-1].view(np.uint32), step.view(np.uint32))


def test_image_errors_are_one_line(model, tmp_path, capsys) -> None:
    path, img = model
    base = ["run", str(path), "--max-tokens", "1", *PIXELS]
    cases = [
        ([*base, "--token-ids", f"1,{IMAGE_ID},{IMAGE_ID}", "--image", str(img)], "image.count"),
        ([*base, "--token-ids", "1,2", "--image", str(img)], "image.count"),
        ([*base, "--token-ids", f"1,{IMAGE_ID}", "--image", str(tmp_path / "no.png")],
         "image.unreadable"),
    ]  # fmt: skip
    for argv, rule in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert rule in err and "Traceback" not in err and err.count("\n") == 1


def test_prompt_image_markers(model, tmp_path) -> None:
    """`<image>` places the image; without one the images come first; counts must agree."""
    import shutil

    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    from weightfile.frontend.tokenizer import sidecar_path

    path, img = model
    local = tmp_path / "m.vqf"
    shutil.copyfile(path, local)
    tok = Tokenizer(WordLevel({"[UNK]": 0, "hello": 3, "world": 4}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(sidecar_path(local)))
    block = [VS_ID, *[IMAGE_ID] * 6, VE_ID]
    for prompt, want in (("hello <image> world", [3, *block, 4]), ("hello world", [*block, 3, 4])):
        out = tmp_path / "t.npz"
        argv = ["trace", str(local), "--prompt", prompt, "--image", str(img), *PIXELS]
        assert main([*argv, "--out", str(out), "--force"]) == 0
        assert np.load(out)["input_ids"].tolist() == want
    argv = ["trace", str(local), "--prompt", "<image> hello <image>", "--image", str(img)]
    assert main([*argv, *PIXELS, "--out", str(tmp_path / "x.npz")]) == 1


def test_image_option_papercuts_are_one_line_usage_errors(model, tmp_path, capsys) -> None:
    """Issue 34 item 11: --image DIR names a directory; --min-pixels above --max-pixels is
    refused before the model loads; an image whose tokens exceed the context (here 1024 × 1024
    pixels: 64 × 64 patches, 1024 merged tokens, over max_seq_len 512) hints at --max-pixels."""
    from PIL import Image

    path, img = model
    ids = ["--token-ids", f"1,{IMAGE_ID}"]
    assert main(["run", str(path), *ids, "--image", str(tmp_path), *PIXELS]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path}: is a directory" in err and err.count("\n") == 1
    bad = ["--min-pixels", "70000", "--max-pixels", "65536"]
    for command in (["run"], ["trace", "--out", str(tmp_path / "t.npz")]):
        assert main([*command, str(path), *ids, "--image", str(img), *bad]) == 2
        err = capsys.readouterr().err
        assert "--min-pixels 70000 is above --max-pixels 65536" in err and err.count("\n") == 1
    big = tmp_path / "big.png"
    Image.fromarray(np.zeros((1024, 1024, 3), np.uint8)).save(big)
    for command in (["run"], ["trace", "--out", str(tmp_path / "t.npz")]):
        argv = [*command, str(path), *ids, "--image", str(big), "--max-pixels", str(1 << 24)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "context of 512" in err and "smaller --max-pixels" in err and err.count("\n") == 1
    assert not (tmp_path / "t.npz").exists()
