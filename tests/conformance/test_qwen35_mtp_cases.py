"""The `ninfer3-mtp-model` conformance cases (weightfile/families/qwen35/conformance_mtp.py,
spec/models.md §qwen35-mtp-round): the committed answers against what plain greedy decoding of
the same file gives (an independent path: no drafts, no journal), their internal consistency,
and both built-in engines answering them."""

from __future__ import annotations

import json

import numpy as np

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus
from weightfile.frontend.generate import stream_tokens
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer

MTP = "ninfer3/v6/mtp-model/qwen35"
NAMES = ("dense-k1", "dense-k3", "moe-k3", "proposal-k3")


def load(name: str) -> tuple[dict, dict]:
    folder = CORPUS_DIR / MTP / name
    return tuple(json.loads((folder / f).read_text()) for f in ("case.json", "want.json"))  # type: ignore[return-value]


def test_the_cases_are_listed_and_have_an_mtp_component() -> None:
    assert (CORPUS_DIR / "files-ninfer3-v6").read_text().split() == [f"{MTP}/{n}" for n in NAMES]
    assert "ninfer3 v6" in (CORPUS_DIR / "VERSION").read_text().splitlines()
    for name in NAMES:
        with open_artifact(CORPUS_DIR / MTP / name / "model.ninfer") as nf:
            mtp = nf.directory.components["mtp"]
            assert mtp.target == "text" and len(mtp.config["architectures"]) == 1
            proposal = nf.directory.components["text"].proposal
            assert (proposal is not None) == (name == "proposal-k3")


def test_tokens_are_plain_greedy_decoding_and_rounds_add_up() -> None:
    for name in NAMES:
        case, want = load(name)
        with open_artifact(CORPUS_DIR / MTP / name / "model.ninfer") as nf:
            model = Qwen35Model(*bind_ninfer(nf, get_codec))
        prompt, new = [int(t) for t in case["prompt"]], int(case["new_tokens"])
        assert [int(t) for t in want["tokens"]] == list(stream_tokens(model, prompt, new))
        k, rows = int(case["draft_tokens"]), 40 if name == "proposal-k3" else 64
        emitted = 1  # the first token comes from the prefill
        for r in want["rounds"]:
            drafts = [int(t) for t in r["draft_tokens"]]
            assert len(drafts) <= k and 0 <= int(r["accepted"]) <= len(drafts)
            words = np.array([[int(w, 16) for w in row] for row in r["draft_logits"]], np.uint32)
            assert words.shape == ((len(drafts), rows) if drafts else (0,))
            if name != "proposal-k3":  # a draft is its row's first largest logit
                assert [int(np.argmax(row)) for row in words.view(np.float32)] == drafts
            emitted += int(r["accepted"]) + 1
        assert emitted == new
        assert any(int(r["accepted"]) > 0 for r in want["rounds"])


def test_both_engines_pass_the_cases() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern=f"{MTP}/*")
        assert [r.verdict for r in results] == ["pass"] * len(NAMES), engine


REJECTED = "ninfer3/v7/mtp-model/qwen35"


def test_every_mtp_rule_has_one_rejected_file_listed_in_the_readme() -> None:
    from weightfile.families.qwen35.conformance_mtp_mutations import MUTATIONS
    from weightfile.ref.ninfer3.describe import verify
    from weightfile.spec.ninfer3.rules import RULES

    ids = (CORPUS_DIR / "files-ninfer3-v7").read_text().split()
    rules = {json.loads((CORPUS_DIR / c / "case.json").read_text())["rule"]: c for c in ids}
    binder = {r for r in RULES if r.startswith(("ninfer3.mtp.", "ninfer3.proposal."))}
    # every MTP / proposal rule but the reference's own refusal of signs (README, CHANGELOG v7)
    assert binder - set(rules) == {"ninfer3.mtp.hadamard"}
    assert set(rules) == set(MUTATIONS) and len(ids) == 17
    readme = (CORPUS_DIR.parent / "README.md").read_text()
    for rule, cid in rules.items():
        assert f"| `{rule}` | {RULES[rule].error_class} |" in readme, rule
        assert cid == f"{REJECTED}/reject-{rule.split('.')[1]}-{rule.split('.')[2]}"
        assert verify(CORPUS_DIR / cid / "model.ninfer") == []  # a valid container
    with open_artifact(CORPUS_DIR / rules["ninfer3.binder.component"] / "model.ninfer") as nf:
        assert "mtp" not in nf.directory.components
    # the out-of-range id, read by hand: int32 little-endian words past the tokenizer's t0 … t7
    with open_artifact(CORPUS_DIR / rules["ninfer3.proposal.token_range"] / "model.ninfer") as nf:
        words = np.frombuffer(bytes(nf.object_bytes("p.ids")), "<i4").tolist()
        vocab = json.loads(bytes(nf.resource("tokenizer.json")))["model"]["vocab"]
        assert max(words) == len(vocab) == 8 and max(vocab.values()) == 7


def test_the_builtin_engines_reject_each_mtp_file_with_its_rule() -> None:
    for engine in ("ref", "fast"):
        results = run_corpus(builtin_implementation(engine), pattern=f"{REJECTED}/*")
        assert len(results) == 17 and all(r.passed for r in results), (engine, results)
