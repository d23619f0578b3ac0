"""The `vqf-moe-model` conformance cases (weightfile/families/qwen3_moe/conformance.py,
spec/models.md §qwen3-moe-vqf-v3)."""

from __future__ import annotations

import json

import numpy as np

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import Answer, builtin_implementation, judge, run_corpus
from weightfile.families.qwen3.conformance import digest
from weightfile.ref.vqf.read import open_vqf

MOE = "vqf/v3/moe-model/qwen3_moe"


def load(name: str) -> tuple[dict, dict]:
    folder = CORPUS_DIR / MOE / name
    return (json.loads((folder / f).read_text()) for f in ("case.json", "want.json"))  # type:
    # ignore[return-value]


def test_the_builtin_engines_pass_the_moe_cases() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern=f"{MOE}/*")
        assert len(results) == 3 and all(r.passed for r in results), results


def test_the_listed_experts_are_the_traced_ones_and_cover_every_fed_token() -> None:
    for name in ("q8-untiled", "q4-tiled", "f32-router-tie"):
        case, want = load(name)
        prompt, steps = len(case["prompt"]), int(case["new_tokens"])
        assert len(want["experts"]) == 2
        for entry in want["experts"]:
            chosen = entry["chosen"]
            assert len(chosen) == prompt + steps - 1
            assert all(len(r) == 2 and int(r[0]) < int(r[1]) < 4 for r in chosen)
            prefill = np.array([[int(e) for e in r] for r in chosen[:prompt]], dtype=np.float32)
            assert digest(prefill) == want["activations"][f"layers.{entry['layer']}.moe_experts"]


def test_the_tie_case_ties_and_the_smaller_index_wins() -> None:
    """Layer 0's experts 1 and 2 have identical router rows in the file, so their logits are
    equal at every token; whenever only one of them is chosen it must be expert 1."""
    with open_vqf(CORPUS_DIR / MOE / "f32-router-tie" / "model.vqf") as vqf:
        router = np.frombuffer(vqf.payload("moe_router"), dtype="<f4").copy().reshape(-1, 32)
    assert (router[1] == router[2]).all() and not (router[5] == router[6]).all()
    _, want = load("f32-router-tie")
    rows = [set(r) for r in want["experts"][0]["chosen"]]
    assert not any("2" in r and "1" not in r for r in rows)
    assert any("1" in r and "2" not in r for r in rows)  # the tie decided at least once


def test_a_wrong_expert_fails_the_case() -> None:
    case, want = load("q8-untiled")
    wrong = json.loads(json.dumps(want))
    last = want["experts"][1]["chosen"][-1]
    wrong["experts"][1]["chosen"][-1] = ["0", "3"] if last != ["0", "3"] else ["1", "2"]
    passed, why = judge(case, want, Answer(0, json.dumps(wrong), ""))
    assert not passed and ".experts" in why
