"""The `vqf-board-vl-model` conformance cases (weightfile/families/qwen3_vl/board_conformance.py,
spec/numerics.md §board-vision)."""

from __future__ import annotations

import json

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus

PATTERN = "vqf/v6/board-vl-model/*"


def test_the_cases_name_the_profile_and_their_hand_derived_geometry() -> None:
    """The board's size by hand (spec/numerics.md §board-vision-preprocess): 90x130 -> 6x9 = 54
    > 16 patches, s = sqrt(16/54) = 0.544, floor(130·s/16) = 4 and floor(90·s/16) = 3 patches,
    48x64, a 3x4 grid, 2 tokens."""
    folders = sorted(CORPUS_DIR.glob("vqf/v6/board-vl-model/qwen3_vl/*"))
    assert [f.name for f in folders] == ["over-the-cap"]
    want = {}
    for f in folders:
        case = json.loads((f / "case.json").read_text())
        assert case["numerics"] == "kestrel-board" and case["image_preprocess"] == "board"
        want[f.name] = json.loads((f / "want.json").read_text())["geometry"]
    assert want == {"over-the-cap": ["48", "64", "3", "4", "2"]}


def test_the_builtin_engines_pass_the_board_vision_cases() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern=PATTERN)
        assert len(results) == 1 and all(r.passed for r in results), results
