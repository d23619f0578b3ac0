"""The `ninfer3-vl-model` conformance cases (weightfile/families/qwen35/conformance_vl.py,
spec/models.md §qwen35-vision): the committed answers against independent sources (transformers'
image processor, hand-expanded prompts and positions), and both built-in engines answering them."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus
from weightfile.families.qwen3.conformance import digest
from weightfile.ref.ninfer3.read import open_artifact

VL = "ninfer3/v4/vl-model/qwen35"
NAMES = ("bf16-one-image", "q8-two-images")
VS, VE, PAD = 60, 61, 62  # the added tokens of the cases' tokenizer.json


def load(name: str) -> tuple[dict, dict]:
    folder = CORPUS_DIR / VL / name
    return tuple(json.loads((folder / f).read_text()) for f in ("case.json", "want.json"))  # type: ignore[return-value]


def pixels(name: str, k: int) -> np.ndarray:
    case, _ = load(name)
    im = case["images"][k]
    raw = (CORPUS_DIR / VL / name / im["file"]).read_bytes()
    return np.frombuffer(raw, np.uint8).reshape(int(im["height"]), int(im["width"]), 3)


def test_the_cases_are_listed_and_have_a_vision_component() -> None:
    assert (CORPUS_DIR / "files-ninfer3-v4").read_text().split() == [f"{VL}/{n}" for n in NAMES]
    assert "ninfer3 v4" in (CORPUS_DIR / "VERSION").read_text().splitlines()
    for name in NAMES:
        with open_artifact(CORPUS_DIR / VL / name / "model.ninfer") as nf:
            vision = nf.directory.components["vision"]
            assert vision.target == "text" and vision.config["model_type"] == "qwen3_5_vision"
            assert "vision/layers/1/attention/value" in nf.directory.bindings


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
    for name in NAMES:
        _, want = load(name)
        for k, got in enumerate(want["images"]):
            out = proc(images=[Image.fromarray(pixels(name, k))], return_tensors="np")
            pv = np.ascontiguousarray(out["pixel_values"], dtype="<f4")
            assert got["pixel_values"]["sha256"] == hashlib.sha256(pv.tobytes()).hexdigest()
            assert got["grid"] == [str(n) for n in out["image_grid_thw"][0]]


def test_prompts_and_positions_by_hand() -> None:
    """gh·gw/4 copies per image; an image's tokens take (p, p+r, p+c), the next text p + max(h',
    w') (spec/models.md §qwen3-vl (b))."""
    _, one = load("bf16-one-image")  # [3, VS, PAD, VE, 9, 4], grid 4x8 -> 2x4 tokens
    assert one["prompt"] == [str(t) for t in (3, VS, *[PAD] * 8, VE, 9, 4)]
    image = [(2, 2 + r, 2 + c) for r in range(2) for c in range(4)]
    want = [(0, 0, 0), (1, 1, 1), *image, (6, 6, 6), (7, 7, 7), (8, 8, 8)]
    assert one["position_ids"] == [[str(v) for v in p] for p in want]
    assert one["rope_delta"] == str(8 + 1 - 13)
    _, two = load("q8-two-images")  # grids 4x4 (2x2 tokens) and 2x6 (1x3 tokens)
    assert [i["grid"] for i in two["images"]] == [["1", "4", "4"], ["1", "2", "6"]]
    first = [(2, 2 + r, 2 + c) for r in range(2) for c in range(2)]
    second = [(7, 7, 7 + c) for c in range(3)]
    want = [(0, 0, 0), (1, 1, 1), *first, (4, 4, 4), (5, 5, 5), (6, 6, 6), *second,
            (10, 10, 10), (11, 11, 11)]  # fmt: skip
    assert two["position_ids"] == [[str(v) for v in p] for p in want]
    assert two["rope_delta"] == str(11 + 1 - 14)


def test_answers_are_consistent_with_themselves() -> None:
    for name in NAMES:
        case, want = load(name)
        steps, prompt = int(case["new_tokens"]), len(want["prompt"])
        rows = np.frombuffer(bytes.fromhex(want["logits"]["hex"]), "<f4").reshape(-1, 64)
        assert rows.shape[0] == prompt + steps - 1
        assert want["activations"]["logits"] == digest(rows[:prompt])
        assert want["tokens"][0] == str(int(np.argmax(rows[prompt - 1])))
        acts = list(want["activations"])
        assert acts[:5] == ["vision.patch_embed", "vision.blocks.0.mlp_residual",
                            "vision.blocks.1.mlp_residual", "vision.merger", "embed"]  # fmt: skip
        assert not any("deepstack" in a for a in acts)


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_the_builtin_engines_answer_the_cases(engine: str) -> None:
    results = run_corpus(builtin_implementation(engine), pattern=f"{VL}/*")
    assert len(results) == 2 and all(r.passed for r in results), results


REJECTED = "ninfer3/v5/vl-model/qwen35"


def test_every_vision_rule_has_one_rejected_file_listed_in_the_readme() -> None:
    from weightfile.families.qwen35.conformance_vl_mutations import MUTATIONS
    from weightfile.ref.ninfer3.describe import verify
    from weightfile.spec.ninfer3.rules import RULES

    ids = (CORPUS_DIR / "files-ninfer3-v5").read_text().split()
    rules = {json.loads((CORPUS_DIR / c / "case.json").read_text())["rule"]: c for c in ids}
    vision = {r for r in RULES if r.startswith("ninfer3.vision.")}
    # every vision rule has its rejected file
    assert vision <= set(rules)
    assert set(rules) == set(MUTATIONS) and len(ids) == 15
    readme = (CORPUS_DIR.parent / "README.md").read_text()
    for rule, cid in rules.items():
        assert f"| `{rule}` | {RULES[rule].error_class} |" in readme, rule
        assert cid == f"{REJECTED}/reject-{rule.split('.')[1]}-{rule.split('.')[2]}"
        assert verify(CORPUS_DIR / cid / "model.ninfer") == []  # a valid container
    with open_artifact(CORPUS_DIR / rules["ninfer3.binder.component"] / "model.ninfer") as nf:
        assert "vision" not in nf.directory.components
    with open_artifact(CORPUS_DIR / rules["ninfer3.vision.token"] / "model.ninfer") as nf:
        assert b"<|image_pad|>" not in bytes(nf.resource("tokenizer.json"))


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_the_builtin_engines_reject_each_file_with_its_rule(engine: str) -> None:
    results = run_corpus(builtin_implementation(engine), pattern=f"{REJECTED}/*")
    assert len(results) == 15 and all(r.passed for r in results), results
