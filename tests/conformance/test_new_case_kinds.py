"""The cases of corpus vqf/v5 and ninfer3/v3 (conformance/README.md "Encoding that must fail",
"Model cases"): encoders' refusals and seeded-sampling model cases, checked independently.

The sampled tokens are re-derived from the case's own logits with a SplitMix64 written here from
its published definition (and checked against its published first output for seed 0) and a
float64 softmax: the token is the first index whose running probability exceeds the draw, unless
the draw lies within rounding of a boundary (then float32 and float64 may disagree, and the case
would be a poor one — the test requires it never happens).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from weightfile.conformance.adapter import Answer
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, case_ids, judge, run_corpus

SAMPLED = sorted(CORPUS_DIR.glob("vqf/v5/model/qwen3/*/case.json"))
MASK = (1 << 64) - 1


def splitmix64(state: int):
    """Sebastiano Vigna's SplitMix64, from its published constants."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def test_splitmix64_gives_its_published_first_output() -> None:
    assert next(splitmix64(0)) == 0xE220A8397B1DCDAF


@pytest.mark.parametrize("path", SAMPLED, ids=lambda p: p.parent.name)
def test_sampled_tokens_follow_from_the_logits(path) -> None:
    case = json.loads(path.read_text())
    want = json.loads(path.with_name("want.json").read_text())
    hexed = bytes.fromhex(want["logits"]["hex"])
    shape = tuple(int(n) for n in want["logits"]["shape"])
    logits = np.frombuffer(hexed, "<f4").reshape(shape).astype(np.float64)
    rows = logits[len(case["prompt"]) - 1 :]  # the row each generated token is drawn from
    draws = splitmix64(int(case["seed"]))
    temperature = float(np.float32(float(case["temperature"])))
    tokens = []
    for row in rows:
        z = row / temperature
        p = np.exp(z - z.max())
        edges = np.cumsum(p / p.sum())
        u = (next(draws) >> 40) * 2.0**-24
        assert np.min(np.abs(edges - u)) > 1e-5, "a draw within rounding of a boundary"
        tokens.append(int(np.searchsorted(edges, u, side="right")))
    assert [str(t) for t in tokens] == want["tokens"]
    greedy = [str(int(row.argmax())) for row in rows]
    assert greedy != want["tokens"]  # sampling really left the argmax somewhere


def test_both_engines_answer_the_new_cases() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern="*/v[35]/*")
        new = [r for r in results if r.case.startswith(("vqf/v5/", "ninfer3/v3/"))]
        assert len(new) == len(case_ids(pattern="vqf/v5/*")) + len(case_ids(pattern="ninfer3/v3/*"))
        assert all(r.passed for r in new), [r for r in new if not r.passed]


def test_an_encoder_that_accepts_what_it_must_refuse_fails_the_case() -> None:
    [cid] = case_ids(pattern="ninfer3/v3/codec/q4_g64_fp16.*/encode-scale-overflow")
    case = json.loads((CORPUS_DIR / cid / "case.json").read_text())
    assert case["expect"] == "reject" and "payload" not in case
    assert not judge(case, None, Answer(0, '{"encoded_sha256": "00"}', ""))[0]
    line = f"InvalidError: {case['rule']}: amax/7 overflows binary16\n"
    assert judge(case, None, Answer(1, "", line))[0]
