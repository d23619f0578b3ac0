"""`trace --profile kestrel-board --image IMG --image-preprocess board` on a VISION file writes
the board vision tower's arrays under the engine dumps' names, and `weightfile diff` against the
engine's own dump of the same image finds every array equal (spec/numerics.md
§board-vision-names). The oracle is tests/data/kestrel-board-v2/vl-a-q8_0-img70x100 (the odd
grid, the enlarged image): the engine's `engine.npz` for `image.npy` through `model.vqf`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from weightfile.cli import main

PACK = Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2" / "vl-a-q8_0-img70x100"
MODEL, ENGINE = str(PACK / "model.vqf"), str(PACK / "engine.npz")
IMAGE_TOKEN = 250


@pytest.fixture(scope="module")
def png(tmp_path_factory) -> str:
    """The pack's image.npy as a PNG (lossless: the same uint8 pixels)."""
    path = tmp_path_factory.mktemp("img") / "img70x100.png"
    Image.fromarray(np.load(PACK / "image.npy")).save(path)
    return str(path)


def board_trace(png: str, out: Path, *extra: str) -> int:
    argv = ["trace", MODEL, "--token-ids", f"1,{IMAGE_TOKEN},2", "--image", png]
    argv += ["--image-preprocess", "board", "--profile", "kestrel-board", "--out", str(out)]
    return main([*argv, *extra])


@pytest.mark.parametrize(("engine", "threads"), [("ref", "1"), ("fast", "1"), ("fast", "3")])
def test_trace_then_diff_against_the_engine_dump_is_equal(png, tmp_path, capsys, engine, threads):
    """Both engines: the trace holds exactly the engine dump's 83 names, and diff says equal
    (exit 0, no --common-only needed); a note says the text tower was not run."""
    out = tmp_path / "vl.npz"
    assert board_trace(png, out, "--engine", engine, "--threads", threads) == 0
    assert "the vision tower's arrays only" in capsys.readouterr().err
    with np.load(out) as got, np.load(ENGINE) as want:
        assert sorted(got.files) == sorted(want.files)
    assert main(["diff", str(out), ENGINE]) == 0
    assert "83 of 83 common arrays bit-identical" in capsys.readouterr().out


def test_a_second_image_is_prefixed(png, tmp_path) -> None:
    """Two images: the first's arrays under the engine's names, the second's under image1.*
    (the same picture twice: the same bits)."""
    out = tmp_path / "two.npz"
    argv = ["trace", MODEL, "--token-ids", f"1,{IMAGE_TOKEN},{IMAGE_TOKEN}", "--image", png]
    argv += ["--image", png, "--image-preprocess", "board", "--profile", "kestrel-board"]
    assert main([*argv, "--out", str(out)]) == 0
    with np.load(out) as z:
        assert len(z.files) == 2 * 83
        for name in ("vision.merger_out", "vit.layer2.gelu_padded", "ds1.fc1.tok5"):
            assert np.array_equal(z[name].view(np.uint32), z["image1." + name].view(np.uint32))


def test_diff_names_a_changed_vision_op(png, tmp_path, capsys) -> None:
    """One bit of one block's fc2 changed: diff exits 1 and names that array."""
    out = tmp_path / "vl.npz"
    assert board_trace(png, out) == 0
    with np.load(out) as z:
        arrays = {n: z[n] for n in z.files}
    arrays["vit.layer1.fc2"].view(np.uint32)[0, 3] ^= 1
    changed = tmp_path / "changed.npz"
    np.savez(changed, **arrays)
    capsys.readouterr()
    assert main(["diff", str(changed), ENGINE]) == 1
    assert "vit.layer1.fc2" in capsys.readouterr().out


def test_run_with_an_image_writes_the_tower_and_the_text_tower(png, tmp_path) -> None:
    """`run --save-logits` with an image under the board profile (spec/numerics.md
    §board-vl-prefill): the tower's arrays, bit-identical to the engine's dump, then the
    multimodal prefill's logits and the decode steps (not checked against engine logits: no pack
    has any; fast == ref: tests/ref/qwen3_vl/board/test_board_vl_prefill.py)."""
    out = tmp_path / "vl.npz"
    argv = ["run", MODEL, "--token-ids", f"1,248,{IMAGE_TOKEN},249,17", "--image", png]
    argv += ["--image-preprocess", "board", "--profile", "kestrel-board", "--max-tokens", "2"]
    assert main([*argv, "--save-logits", str(out)]) == 0
    with np.load(out) as got, np.load(ENGINE) as engine:
        for name in engine.files:
            assert np.array_equal(got[name].view(np.uint8), engine[name].view(np.uint8)), name
        assert got["prefill.logits"].shape == (256,) and "decode.step1.logits" in got.files
        assert got["decode.tokens"].shape == (2,)


def test_the_board_profile_refuses_what_it_does_not_reproduce(png, tmp_path, capsys) -> None:
    """An image token by token (the engine's decode path takes no images): exit 3,
    vqf.bind.unsupported naming the limit; the hf recipe under the board profile:
    frontend.image.mode."""
    argv = ["run", MODEL, "--token-ids", f"1,{IMAGE_TOKEN},2", "--image", png, "--profile"]
    tokenwise = ["kestrel-board", "--image-preprocess", "board", "--prompt-path", "tokenwise"]
    assert main([*argv, *tokenwise]) == 3
    err = capsys.readouterr().err
    assert "vqf.bind.unsupported" in err and "batched multimodal prefill only" in err
    assert main([*argv, "kestrel-board"]) == 3
    assert "frontend.image.mode" in capsys.readouterr().err


def test_a_text_prompt_on_the_vision_file_runs_the_dense_board_model(tmp_path, capsys) -> None:
    """Without images the VISION file's text tower runs on the dense board model: the same bits
    as that model bound directly (ref/qwen3/board), in the board's names."""
    from weightfile.ref.qwen3.board.model import bind_board, generate
    from weightfile.ref.vqf.read import open_vqf

    out = tmp_path / "text.npz"
    argv = ["run", MODEL, "--token-ids", "1,17,42", "--max-tokens", "2", "--engine", "ref"]
    assert main([*argv, "--profile", "kestrel-board", "--save-logits", str(out)]) == 0
    with open_vqf(MODEL) as vqf:
        want = generate(bind_board(vqf), [1, 17, 42], 2)
    with np.load(out) as got:
        for name, value in want.items():
            assert np.array_equal(got[name].view(np.uint32), value.view(np.uint32)), name
