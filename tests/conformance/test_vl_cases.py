"""The `vqf-vl-model` conformance cases (weightfile/families/qwen3_vl/conformance.py,
spec/models.md §qwen3-vl): the committed answers against independent sources (transformers' image
processor, hand-expanded prompts and positions), and the runner's judgement of a wrong answer."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import Answer, builtin_implementation, judge, run_corpus
from weightfile.families.qwen3.conformance import digest
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.vqf.flags import VQFFlag

VL = "vqf/v4/vl-model/qwen3_vl"
NAMES = ("q8-one-image", "q4-two-images", "q8-board-preprocess")
VS, VE, PAD = 60, 61, 62  # vision start, vision end, image pad of VL_HF


def load(name: str) -> tuple[dict, dict]:
    folder = CORPUS_DIR / VL / name
    return (json.loads((folder / f).read_text()) for f in ("case.json", "want.json"))  # type:
    # ignore[return-value]


def pixels(name: str, k: int) -> np.ndarray:
    case, _ = load(name)
    im = case["images"][k]
    raw = (CORPUS_DIR / VL / name / im["file"]).read_bytes()
    return np.frombuffer(raw, np.uint8).reshape(int(im["height"]), int(im["width"]), 3)


def test_the_cases_are_listed_and_small() -> None:
    manifest = (CORPUS_DIR / "files-vqf-v4").read_text().split()
    assert manifest == [f"{VL}/{n}" for n in NAMES]
    size = sum(p.stat().st_size for p in (CORPUS_DIR / "vqf" / "v4").rglob("*") if p.is_file())
    assert size < 1_000_000  # issue 18: the corpus grows by less than 1 MB
    assert "vqf v4" in (CORPUS_DIR / "VERSION").read_text().splitlines()


def test_the_files_have_a_vision_tower_with_deepstack_and_padded_fc2() -> None:
    for name in NAMES:
        with open_vqf(CORPUS_DIR / VL / name / "model.vqf") as vqf:
            a = vqf.header.arch
            assert vqf.header.flags & VQFFlag.VISION
            assert a["vis_ds_count"] == 1 and a["vis_ffn"] == 48
            # fc2 rows padded to 64 columns: 32 rows · 64 / 32 blocks of 34 bytes per block
            assert vqf.entry("v_q8_fc2").bytes == 2 * 32 * 64 // 32 * 34


def test_pixel_values_equal_transformers_processor() -> None:
    pil = pytest.importorskip(
        "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl",
        reason="the oracle needs the 'external' extra (transformers)",
    )
    from PIL import Image

    proc = pil.Qwen2VLImageProcessorPil(
        patch_size=4, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3,
        image_std=[0.5] * 3, min_pixels=64, max_pixels=1024,
    )  # fmt: skip
    for name in ("q8-one-image", "q4-two-images"):
        case, want = load(name)
        assert case["image_preprocess"] == "hf"
        for k, got in enumerate(want["images"]):
            out = proc(images=[Image.fromarray(pixels(name, k))], return_tensors="np")
            pv = np.ascontiguousarray(out["pixel_values"], dtype="<f4")
            assert got["pixel_values"]["sha256"] == hashlib.sha256(pv.tobytes()).hexdigest()
            assert got["grid"] == [str(n) for n in out["image_grid_thw"][0]]
            assert got["pixel_values"]["shape"] == [str(n) for n in pv.shape]


def test_the_board_grid_by_hand() -> None:
    # 10x19 pixels, 4-pixel patches: floor(10/4) = 2 rows, floor(19/4) = 4 columns of patches
    _, want = load("q8-board-preprocess")
    assert want["images"][0]["grid"] == ["1", "2", "4"]
    assert want["images"][0]["tokens"] == "2"
    assert want["images"][0]["pixel_values"]["shape"] == ["8", str(3 * 2 * 4 * 4)]


def test_prompts_and_positions_by_hand() -> None:
    """Each placeholder becomes gh·gw/4 copies; an image's tokens take (p, p+r, p+c) over its
    merged grid and the next text position is p + max(h', w') (spec/models.md §qwen3-vl (b))."""
    _, one = load("q8-one-image")  # [5, VS, PAD, VE, 17, 33], grid 2x4 -> 1x2 tokens
    assert one["prompt"] == [str(t) for t in (5, VS, PAD, PAD, VE, 17, 33)]
    want = [(0, 0, 0), (1, 1, 1), (2, 2, 2), (2, 2, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6)]
    assert one["position_ids"] == [[str(v) for v in p] for p in want]
    assert one["rope_delta"] == "0"
    _, two = load("q4-two-images")  # grids 2x4 (1x2 tokens) and 4x4 (2x2 tokens)
    assert two["prompt"] == [str(t) for t in (VS, PAD, PAD, VE, 9, VS, *[PAD] * 4, VE, 40)]
    want = [(0, 0, 0), (1, 1, 1), (1, 1, 2), (3, 3, 3), (4, 4, 4), (5, 5, 5),
            (6, 6, 6), (6, 6, 7), (6, 7, 6), (6, 7, 7), (8, 8, 8), (9, 9, 9)]  # fmt: skip
    assert two["position_ids"] == [[str(v) for v in p] for p in want]
    assert two["rope_delta"] == str(9 + 1 - 12)


def test_answers_are_consistent_with_themselves() -> None:
    for name in NAMES:
        case, want = load(name)
        steps, prompt = int(case["new_tokens"]), len(want["prompt"])
        rows = np.frombuffer(bytes.fromhex(want["logits"]["hex"]), "<f4").reshape(-1, 64)
        assert rows.shape[0] == prompt + steps - 1
        assert want["activations"]["logits"] == digest(rows[:prompt])  # the prefill rows
        assert want["tokens"][0] == str(int(np.argmax(rows[prompt - 1])))
        acts = list(want["activations"])
        assert acts[:5] == ["vision.patch_embed", "vision.blocks.0.mlp_residual",
                            "vision.blocks.1.mlp_residual", "vision.deepstack.0",
                            "vision.merger"]  # fmt: skip
        i = acts.index("layers.0.ffn_residual")
        assert acts[i + 1] == "layers.0.deepstack" and "layers.1.deepstack" not in acts


def test_a_wrong_pixel_digest_or_position_fails_the_case() -> None:
    case, want = load("q4-two-images")
    for path in (("images", 1, "pixel_values", "sha256"), ("position_ids", 7, 2)):
        wrong = json.loads(json.dumps(want))
        at = wrong
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = "0" * 64 if path[0] == "images" else "8"
        passed, why = judge(case, want, Answer(0, json.dumps(wrong), ""))
        assert not passed and f": .{path[0]}[" in why, why


def test_the_fast_builtin_answers_a_case() -> None:
    # ref regenerates every answer byte for byte (tests/conformance/test_corpus.py); fast runs
    # the family's fast model when the registry row has one, else the reference (its notes say)
    results = run_corpus(builtin_implementation("fast"), pattern=f"{VL}/q8-one-image")
    assert len(results) == 1 and results[0].passed, results


def test_the_adapter_command_declares_and_answers_the_kind(capsys) -> None:
    # the protocol's two calls, in process (tests/conformance/test_corpus.py runs the subprocess)
    from weightfile.conformance.adapter import main

    assert main(["--engine", "ref", "kinds"]) == 0
    assert "vqf-vl-model" in json.loads(capsys.readouterr().out)["kinds"]
    case, want = load("q8-board-preprocess")
    assert (
        main(["--engine", "ref", "vqf-vl-model", str(CORPUS_DIR / VL / "q8-board-preprocess")]) == 0
    )
    assert judge(case, want, Answer(0, capsys.readouterr().out, ""))[0]
