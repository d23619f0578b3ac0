"""The committed conformance corpus: complete, small, drift-free, and passed by ref and fast.

The built-in engines are run in-process over the whole corpus and through the real subprocess
protocol (the adapter command) for a sample, so the command line path is exercised too.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.conformance.adapter import Answer, answer
from weightfile.conformance.generate import CORPUS_DIR, drift
from weightfile.conformance.ninfer3_mutations import CASES as NINFER3_CASES
from weightfile.conformance.runner import (
    Implementation,
    builtin_implementation,
    case_ids,
    command_implementation,
    run_corpus,
)
from weightfile.families.qwen3.conformance import fast_opener
from weightfile.families.qwen35.conformance_mtp_mutations import MUTATIONS as QWEN35_MTP_MUTATIONS
from weightfile.families.qwen35.conformance_mutations import MUTATIONS as QWEN35_MUTATIONS
from weightfile.families.qwen35.conformance_vl_mutations import MUTATIONS as QWEN35_VL_MUTATIONS
from weightfile.ref.crypto import sm2
from weightfile.spec.errors import ERROR_CLASSES
from weightfile.spec.ninfer3.rules import RULES as NINFER3_RULES
from weightfile.spec.rules import lookup
from weightfile.spec.vqf.rules import RULES

ALL_KINDS = frozenset(
    {"vqf-container", "ninfer3-container", "vqf-codec", "ninfer3-codec", "vqf-model",
     "ninfer3-model", "vqf-protected", "vqf-board-model", "vqf-moe-model"}
)  # fmt: skip

ADAPTER = f"{sys.executable} -m weightfile.conformance.adapter"


def _cases(pattern: str) -> list[dict]:
    return [
        json.loads((CORPUS_DIR / c / "case.json").read_text()) for c in case_ids(pattern=pattern)
    ]


def test_regenerating_the_corpus_gives_identical_bytes():
    assert drift() == []


def test_every_vqf_file_rule_has_one_invalid_case():
    file_rules = {r.id for r in RULES.values() if r.origin in ("loader", "strict", "feature")}
    cases = _cases("vqf/*")
    rejected = [c["rule"] for c in _cases("vqf/v1/*") if c["expect"] == "reject"]
    encoders = [c for c in _cases("vqf/v5/*") if c["expect"] == "reject"]
    assert encoders and all(c["kind"] == "codec" for c in encoders)
    assert sorted(rejected) == sorted(file_rules)
    # corpus v2: one keyed case per protected rule (spec/vqf.md §protected), and only those
    protected = [c for c in _cases("vqf/v2/*") if c["expect"] == "reject"]
    assert all(c["kind"] == "protected" for c in _cases("vqf/v2/*"))
    assert sorted(c["rule"] for c in protected) == sorted(
        r.id for r in RULES.values() if r.origin == "protected"
    )
    for c in cases:
        if c["expect"] == "reject":
            # a codec case's rule is a member of a family (vqf.codec.*.finite_input)
            rule = RULES[c["rule"]] if c["kind"] != "codec" else lookup(c["rule"])
            assert rule is not None and c["error_class"] == rule.error_class
            assert {"rule": c["rule"], "error_class": c["error_class"]} in c["accepted"]
            assert all(a["error_class"] in ERROR_CLASSES for a in c["accepted"])


def test_every_ninfer3_rule_a_file_can_break_has_one_invalid_case():
    cases = _cases("ninfer3/*")
    # the encoders' refusals (ninfer3/v3) are codec rules, not rules a file breaks
    rejected = sorted(c["rule"] for c in cases if c["expect"] == "reject" and c["kind"] != "codec")
    containers = [c["rule"] for c in cases if c["expect"] == "reject" and c["kind"] == "container"]
    assert sorted(containers) == sorted(NINFER3_CASES)
    models = [c["rule"] for c in cases if c["expect"] == "reject" and c["kind"] == "model"]
    assert sorted(models) == sorted(QWEN35_MUTATIONS)
    assert all(r.split(".")[1] in ("text", "binder") for r in models)
    # ninfer3 v5: the vision binder's rules and the component rules a vision component adds
    vision = [c["rule"] for c in cases if c["expect"] == "reject" and c["kind"] == "vl-model"]
    assert sorted(vision) == sorted(QWEN35_VL_MUTATIONS)
    assert all(r.split(".")[1] in ("vision", "binder") for r in vision)
    # ninfer3 v7: the MTP and proposal binders' rules and the component rules mtp adds
    mtp = [c["rule"] for c in cases if c["expect"] == "reject" and c["kind"] == "mtp-model"]
    assert sorted(mtp) == sorted(QWEN35_MTP_MUTATIONS)
    assert all(r.split(".")[1] in ("mtp", "proposal", "binder") for r in mtp)
    # Left out on purpose (README): requests, the writer, the importer's checkpoint rules, and
    # the reference's own refusal of Hadamard signs on MTP Uses (not a property of the file).
    left_out = {r for r in NINFER3_RULES if r.split(".")[1] in ("writer", "range")}
    left_out |= {r for r in NINFER3_RULES if r.startswith("ninfer3.text.hf_")}
    left_out |= {"ninfer3.object.unknown", "ninfer3.mtp.hadamard"}
    # ... and weightfile's own safe-open limits (spec/ninfer3.md §safe-files): a volume that is a
    # symlink out of the folder (corpus files are plain files) and the reader's JSON size cap,
    # a limit of this implementation rather than a rule of the format
    left_out |= {"ninfer3.part.outside", "ninfer3.header.json_limit"}
    assert set(NINFER3_RULES) - set(rejected) == left_out
    for c in cases:
        if c["expect"] == "reject":
            rule = NINFER3_RULES[c["rule"]] if c["kind"] != "codec" else lookup(c["rule"])
            assert rule is not None and c["error_class"] == rule.error_class


def test_the_manifest_lists_every_case_folder_and_the_corpus_is_small():
    folders = {p.parent.relative_to(CORPUS_DIR).as_posix() for p in CORPUS_DIR.rglob("case.json")}
    assert sorted(folders) == sorted(case_ids())
    valid = [c for c in case_ids(pattern="vqf/*") if "/valid/" in c]
    assert {c.split("/")[3] for c in valid} == {"current", "legacy"}
    total = sum(p.stat().st_size for p in CORPUS_DIR.rglob("*") if p.is_file())
    # vqf/v4 (the Qwen3-VL cases) added 0.74 MB to 4.84; ninfer3/v4 (Qwen3.5 with vision, 0.32),
    # the Hadamard case (0.12) and the sampled vqf/v5 models (0.06) about 0.5 MB more: 6.02 MB;
    # ninfer3/v5 (15 rejected vision files of ~50 KB, mostly their JSON directories) 0.75 MB;
    # vqf/v6 (the board vision tower: a 16-pixel patch embedding and F32 mergers) 0.51 MB;
    # ninfer3/v6 (four Qwen3.5 MTP files and their rounds) 0.49 MB;
    # ninfer3/v7 (17 rejected MTP files of ~40 KB, mostly payload alignment) 0.66 MB;
    # vqf/v7 (the board MoE packs' two model files as the engine ran them, 0.47 MB, their FFN
    # inputs and answers, and four rejected MoE files of 32-65 KB) 0.78 MB: 9.21 MB
    assert total < 9_300_000, total


def _strings_only(value: object) -> bool:
    if isinstance(value, dict):
        return all(_strings_only(v) for v in value.values())
    if isinstance(value, list):
        return all(_strings_only(v) for v in value)
    return isinstance(value, str)


def test_want_json_holds_only_strings_and_covers_versions_2_and_3():
    wants = [json.loads(p.read_text()) for p in CORPUS_DIR.rglob("want.json")]
    assert wants and all(_strings_only(w) for w in wants)
    assert {w["header"]["version"] for w in wants if w.get("format") == "vqf"} == {"2", "3"}
    # An independent spot check: the SHA-256 of the first tensor's bytes, sliced by hand.
    folder = CORPUS_DIR / "vqf/v1/valid/current/v2-q4-tiled"
    want = json.loads((folder / "want.json").read_text())
    first = want["tensors"][0]
    blob = (folder / "input.vqf").read_bytes()
    start, size = int(first["offset"]), int(first["bytes"])
    assert hashlib.sha256(blob[start : start + size]).hexdigest() == first["sha256"]
    assert int.from_bytes(blob[:4], "little") == 0x57465146  # spec/vqf.md §header-layout magic


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_builtin_engines_pass_the_whole_corpus_in_process(engine):
    results = run_corpus(builtin_implementation(engine))
    assert len(results) == len(case_ids()) >= 160
    assert [r for r in results if not r.passed and not r.skipped] == []
    skipped = [r for r in results if r.skipped]
    if engine == "ref" or fast_opener() is not None:
        assert skipped == []
    else:  # no C kernels on this machine: skipped, never silently the reference
        assert {r.case.split("/")[2] for r in skipped} == {"model"}
        assert all(r.reason.startswith("skipped: no C kernels") for r in skipped)


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_builtin_engines_pass_a_sample_through_the_subprocess_protocol(engine, capsys):
    status = main(["conformance", "run", "--impl", f"{ADAPTER} --engine {engine}",
                   "--run", "vqf/v1/*/[lh]e*/[lm]*"])  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert status == 0, out
    assert out[-1].endswith(" passed, 0 failed, 0 skipped") and int(out[-1].split()[0]) >= 3
    assert all(line.startswith("PASS ") for line in out[:-1])
    # One case of every kind through the same command (it is asked `kinds` once).
    impl = command_implementation(f"{ADAPTER} --engine {engine}")
    sample = ["ninfer3/v1/valid/sharded/cpp-fixture", "ninfer3/v1/invalid/part/missing",
              "vqf/v1/codec/q4_0_4x4/special", "ninfer3/v1/codec/nvfp4*/words",
              "ninfer3/v1/model/qwen35/dense-bf16", "ninfer3/v1/model/qwen35/reject-text-key",
              "vqf/v2/valid/current/enc-signed", "vqf/v1/model/qwen3/f32-one-token"]  # fmt: skip
    results = [r for pattern in sample for r in run_corpus(impl, pattern=pattern)]
    assert len(results) == len(sample)
    if engine == "fast" and fast_opener() is None:
        assert results[-1].skipped and "no C kernels" in results[-1].reason
        results = results[:-1]
    assert all(r.passed for r in results), results


def test_protected_cases_pass_through_the_subprocess_protocol_with_their_keys(monkeypatch, capsys):
    """The runner hands a case's keys to the command as VLLM_VQF_KEY / VLLM_VQF_SIGN_PUB, and a
    key in the caller's environment does not reach a case that gives none."""
    monkeypatch.setenv("VLLM_VQF_KEY", "vqf conformance passphrase")  # would "fix" enc/no_key
    status = main(["conformance", "run", "--impl", f"{ADAPTER} --engine ref",
                   "--run", "vqf/v2/*"])  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert status == 0, out
    assert out[-1] == "10 passed, 0 failed, 0 skipped"
    assert "PASS vqf/v2/invalid/enc/no_key  UnsupportedError: vqf.enc.no_key" in out
    assert os.environ["VLLM_VQF_KEY"] == "vqf conformance passphrase"  # the caller's, restored


def test_protected_cases_carry_published_keys_and_need_them():
    cases = {c["id"]: c for c in _cases("vqf/v2/*")}
    assert cases["vqf/v2/valid/current/enc-signed"]["keys"] == {
        "passphrase": "vqf conformance passphrase",
        "sign_pub": sm2.public_key(bytes.fromhex(cases["vqf/v2/valid/current/enc-signed"]
                                                 ["signer"]["sign_priv"])).hex(),
    }  # fmt: skip
    assert cases["vqf/v2/invalid/enc/no_key"]["keys"] == {}

    def keyless(kind: str, path: Path) -> Answer:  # ignores the keys it is given
        os.environ.pop("VLLM_VQF_KEY", None)
        os.environ.pop("VLLM_VQF_SIGN_PUB", None)
        return answer(kind, str(path), "ref")

    results = {
        r.case: r for r in run_corpus(Implementation(keyless, ALL_KINDS), pattern="vqf/v2/*")
    }
    assert not results["vqf/v2/valid/current/enc"].passed
    assert "vqf.enc.no_key" in results["vqf/v2/valid/current/enc"].reason
    assert not results["vqf/v2/invalid/sig/pub"].passed
    assert results["vqf/v2/invalid/sig/no_key"].passed


def test_a_wrong_plaintext_digest_fails_an_encrypted_case():
    def wrong_digest(kind: str, path: Path) -> Answer:
        got = answer(kind, str(path), "ref")
        return Answer(got.status, got.stdout.replace('"sha256": "', '"sha256": "0', 1), got.stderr)

    [r] = run_corpus(Implementation(wrong_digest, ALL_KINDS), pattern="vqf/v2/valid/*/enc")
    assert not r.passed and ".tensors[0].sha256" in r.reason


def test_an_implementation_that_always_accepts_fails_every_invalid_case(tmp_path, capsys):
    script = tmp_path / "always_ok.py"
    script.write_text(
        "import sys\nif sys.argv[1:] == ['kinds']: print('{\"kinds\": [\"vqf-container\"]}')\n"
    )
    status = main(["conformance", "run", "--impl", f"{sys.executable} {script}",
                   "--run", "vqf/*/invalid/header/*", "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert status == 1
    assert doc["passed"] == 0 and doc["failed"] == len(doc["results"]) >= 10


def test_a_wrong_rule_or_a_wrong_digest_is_a_fail():
    def wrong_rule(kind: str, path: Path) -> Answer:
        got = answer(kind, str(path), "ref")
        if got.status == 1:
            return Answer(1, "", got.stderr.replace("vqf.header.magic", "vqf.header.version"))
        return got

    impl = Implementation(wrong_rule, ALL_KINDS)
    results = {r.case: r for r in run_corpus(impl, pattern="vqf/*/header/*")}
    assert not results["vqf/v1/invalid/header/magic"].passed
    assert results["vqf/v1/invalid/header/version"].passed

    def wrong_digest(kind: str, path: Path) -> Answer:
        got = answer(kind, str(path), "ref")
        return Answer(got.status, got.stdout.replace('"sha256": "', '"sha256": "0', 1), got.stderr)

    [r] = run_corpus(Implementation(wrong_digest, ALL_KINDS), pattern="*/valid/legacy/*")
    assert not r.passed and ".tensors[0].sha256" in r.reason


def test_a_crash_is_a_fail(tmp_path):
    def crash(kind: str, path: Path) -> Answer:
        return Answer(139, "", "Segmentation fault")

    [r] = run_corpus(Implementation(crash, ALL_KINDS), pattern="vqf/*/invalid/header/magic")
    assert not r.passed and "crashed (exit 139)" in r.reason


def test_undeclared_kinds_are_skipped_not_failed():
    impl = Implementation(lambda kind, path: Answer(139, "", ""), frozenset({"vqf-codec"}))
    results = run_corpus(impl, pattern="*/invalid/*")
    assert results and all(r.skipped and not r.passed for r in results)


def test_a_wrong_word_in_a_codec_answer_is_a_fail():
    def flip(kind: str, path: Path) -> Answer:
        got = answer(kind, str(path), "ref")
        doc = json.loads(got.stdout)
        hexed = doc["values"]["hex"]
        doc["values"]["hex"] = ("1" if hexed[0] == "0" else "0") + hexed[1:]
        return Answer(0, json.dumps(doc), "")

    [r] = run_corpus(Implementation(flip, ALL_KINDS), pattern="vqf/v1/codec/q4_0/special")
    assert not r.passed and ".values.hex" in r.reason


def test_the_readme_documents_every_file_rule_and_error_class():
    readme = (CORPUS_DIR.parent / "README.md").read_text()
    file_rules = [
        r for r in RULES.values() if r.origin in ("loader", "strict", "feature", "protected")
    ]
    for r in file_rules:
        assert f"| `{r.id}` | {r.error_class} |" in readme, r.id
    for name in ERROR_CLASSES:
        assert f"| `{name}` |" in readme, name
    for rule in NINFER3_CASES:
        assert f"| `{rule}` | {NINFER3_RULES[rule].error_class} |" in readme, rule
    for kind in ALL_KINDS:
        assert f"`{kind}`" in readme, kind


def test_every_spec_number_check_holds_and_can_fail():
    from weightfile.conformance.generate import corpus_files
    from weightfile.conformance.spec_numbers import CHECKS, check_all

    files = corpus_files()
    assert check_all(files) == []
    tiny = "ninfer3/v1/valid/single/tiny/model.ninfer"
    broken = dict(files) | {tiny: files[tiny][:-1] + b"j"}  # "hellj"
    assert [p for p in check_all(broken) if "§1.9 tiny" in p]
    readme = (CORPUS_DIR.parent / "README.md").read_text()
    assert all(f"`{name}`" in readme for name, _ in CHECKS)


def test_a_command_that_does_not_declare_its_kinds_is_not_run(tmp_path, capsys):
    script = tmp_path / "mute.py"
    script.write_text("import sys\nsys.exit(0)\n")  # answers `kinds` with nothing
    status = main(["conformance", "run", "--impl", f"{sys.executable} {script}"])
    err = capsys.readouterr().err  # a usage error: one line on stderr
    assert status == 2 and "did not answer `kinds`" in err


def test_the_generator_draws_values_only_from_the_bit_exact_source():
    """NEP 19: numpy's random streams may change between releases; the corpus must not."""
    sources = [p for p in (CORPUS_DIR.parent).glob("*.py") if p.name != "seeded.py"]
    assert len(sources) > 10
    for path in sources:
        text = path.read_text()
        assert "np.random" not in text and "default_rng" not in text, path.name
