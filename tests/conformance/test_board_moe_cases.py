"""The `vqf-board-moe-model` conformance cases, vqf v7 (weightfile/families/qwen3_moe/
board_conformance.py, spec/numerics.md §board-moe-model).

The FFN arrays of the accepted cases are checked here against the board engine's own outputs
(tests/data/kestrel-board-v2/moe-*, computed by the engine's code under qemu), independently of
the generator's cross-check; the tie and the rejections are checked against the spec's rules by
hand."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from weightfile.conformance import crosscheck
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus

PATTERN = "vqf/v7/board-moe-model/*"
CASES = CORPUS_DIR / "vqf" / "v7" / "board-moe-model" / "qwen3_moe"
DATA = Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2"
ADAPTER = [sys.executable, "-m", "weightfile.conformance.adapter", "--engine", "ref"]


def case_of(name: str) -> tuple[dict, dict]:
    folder = CASES / name
    return (json.loads((folder / "case.json").read_text()),
            json.loads((folder / "want.json").read_text()))  # fmt: skip


def engine(pack: str) -> dict[str, np.ndarray]:
    with np.load(DATA / pack / "engine.npz") as npz:
        return {n: npz[n] for n in npz.files}


def test_the_accepted_cases_run_the_packs_files_on_their_inputs() -> None:
    """model.vqf is the file the engine ran (the pack's recorded SHA-256), x_in.bin its moe.x_in,
    and the answer's hex FFN arrays are the engine's, bit for bit; the digests are of its arrays."""
    for name, pack in (("q8-tie-prefill", "moe-d-q8_0-x102"), ("q8-tokenwise", "moe-a-q8_0-x101")):
        case, want = case_of(name)
        assert case["pack"] == f"kestrel-board-v2/{pack}" and case["numerics"] == "kestrel-board"
        recipe = json.loads((DATA / pack / "case.json").read_text())["recipe"]
        blob = (CASES / name / "model.vqf").read_bytes()
        assert hashlib.sha256(blob).hexdigest() == recipe["vqf_sha256"]
        theirs = engine(pack)
        assert (CASES / name / "x_in.bin").read_bytes() == theirs["moe.x_in"].tobytes()
        ffn = want["ffn"]
        for n in ("moe.router_logits", "moe.weights", "moe.out"):
            ours = np.frombuffer(bytes.fromhex(ffn[n]["hex"]), "<u4")
            assert np.array_equal(ours, theirs[n].view(np.uint32).ravel()), (name, n)
        ids = np.frombuffer(bytes.fromhex(ffn["moe.experts"]["hex"]), "<i4")
        assert ids.tolist() == theirs["moe.experts"].ravel().tolist()
        for n in ("moe.gate", "moe.up", "moe.act", "moe.partial_sum"):
            assert ffn[n] == hashlib.sha256(theirs[n].astype("<f4").tobytes()).hexdigest()


def test_the_generators_cross_check_catches_one_flipped_bit() -> None:
    """crosscheck.check_board_moe accepts the committed cases and names a one-bit change."""
    files = {p.relative_to(CORPUS_DIR).as_posix(): p.read_bytes()
             for p in CASES.rglob("*") if p.is_file()}  # fmt: skip
    assert crosscheck.check_board_moe(files) == []
    key = "vqf/v7/board-moe-model/qwen3_moe/q8-tie-prefill/want.json"
    want = json.loads(files[key])
    raw = bytearray(bytes.fromhex(want["ffn"]["moe.weights"]["hex"]))
    raw[0] ^= 1
    want["ffn"]["moe.weights"]["hex"] = raw.hex()
    problems = crosscheck.check_board_moe({**files, key: json.dumps(want).encode()})
    assert problems == [
        "vqf/v7/board-moe-model/qwen3_moe/q8-tie-prefill: ffn moe.weights differs from the engine's"
    ]
    # a pack that is not in the tree is a problem, never a skipped check
    key = "vqf/v7/board-moe-model/qwen3_moe/q8-tokenwise/case.json"
    case = {**json.loads(files[key]), "pack": "kestrel-board-v2/moe-z-absent"}
    problems = crosscheck.check_board_moe({**files, key: json.dumps(case).encode()})
    assert problems == [
        "vqf/v7/board-moe-model/qwen3_moe/q8-tokenwise: the board pack "
        "kestrel-board-v2/moe-z-absent is missing (tests/data)"
    ]


def test_the_prompt_reaches_the_exact_router_tie_on_both_sides_of_the_kth_slot() -> None:
    """spec/numerics.md §board-moe-topk on the moe-d file (layer 1's router rows 0 and 7 are
    identical): where both are chosen 0 ranks just before 7; where only one is, it is 0, at the
    3rd slot. Both happen at tokens of the case's prompt path."""
    _, want = case_of("q8-tie-prefill")
    rows = want["experts"][1]["chosen"]
    both = [r for r in rows if "0" in r and "7" in r]
    edge = [r for r in rows if ("0" in r) != ("7" in r)]
    assert both and all(r.index("7") == r.index("0") + 1 for r in both)
    # equal logits: where only one is chosen it is 0, and only at the last (3rd) slot
    assert edge and all(r[2] == "0" and "7" not in r for r in edge)
    assert all(len(r) == 3 for r in rows) and len(rows) == 9 + 4


def test_the_rejections_name_the_limit_and_the_files_value() -> None:
    """issue 31 item 4: each refusal's message says what the board needs and what the file has."""
    words = {
        "reject-q4-experts": ("vqf.bind.unsupported", "Q8_0 projections and experts", "is q4"),
        "reject-tied-lm-head": ("vqf.bind.unsupported", "an untied Q8_0 lm_head", "is tied"),
        "reject-head-dim-16": ("vqf.bind.unsupported", "a multiple of 32", "head_dim is 16"),
        "reject-moe-width-48": ("vqf.bind.moe_band", "whole 32-column blocks", "moe_ffn 48"),
    }
    for name, (rule, limit, value) in words.items():
        case = json.loads((CASES / name / "case.json").read_text())
        assert case["expect"] == "reject" and case["rule"] == rule
        got = subprocess.run([*ADAPTER, "vqf-board-moe-model", str(CASES / name)],
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert got.returncode == 1 and got.stderr.split(": ")[1] == rule, got.stderr
        assert limit in got.stderr and value in got.stderr, got.stderr


def test_verify_names_the_zero_output_defect_of_the_width_48_file(capsys) -> None:
    """The file the binder refuses is the geometry where the engine's Q8 MoE FFN returns zeros:
    `verify --engine-defaults` names it (spec/numerics.md §board-defects)."""
    from weightfile.cli import main

    main(["verify", "--engine-defaults", str(CASES / "reject-moe-width-48" / "model.vqf")])
    assert "engine: defect [vqf.defect.moe_q8_width]" in capsys.readouterr().out


def test_the_builtin_engines_pass_the_board_moe_cases() -> None:
    for name in ("ref", "fast"):
        results = run_corpus(builtin_implementation(name), pattern=PATTERN)
        assert len(results) == 6 and all(r.passed for r in results), results
