"""The `vqf-board-model` conformance cases (weightfile/families/qwen3/board_conformance.py,
spec/numerics.md §board)."""

from __future__ import annotations

import json

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus
from weightfile.families.qwen3.conformance import run as canonical_run
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf


def test_every_board_case_names_its_profile_and_both_prompt_paths_are_covered() -> None:
    cases = [json.loads(p.read_text()) for p in CORPUS_DIR.glob("vqf/v3/board-model/*/*/case.json")]
    assert len(cases) == 4 and all(c["numerics"] == "kestrel-board" for c in cases)
    assert {c["prompt_path"] for c in cases} == {"prefill", "tokenwise"}


def test_the_builtin_engines_pass_the_board_cases() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern="vqf/v3/board-model/*")
        assert len(results) == 4 and all(r.passed for r in results), results


def test_a_board_case_is_not_answered_by_the_canonical_profile() -> None:
    """Guard that the cases test the profile: the canonical forward pass on the same file and
    prompt gives other prompt logits than want.json's first row."""
    folder = CORPUS_DIR / "vqf/v3/board-model/qwen3/q8-prefill"
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    with open_vqf(folder / "model.vqf") as vqf:
        model = Qwen3Model(*bind_vqf(vqf))
    canon = canonical_run(model, [int(t) for t in case["prompt"]], 1, [])
    width = 64 * 4 * 2  # one row of 64 float32 logits, as hex
    assert canon["logits"]["hex"][-width:] != want["logits"]["hex"][:width]
