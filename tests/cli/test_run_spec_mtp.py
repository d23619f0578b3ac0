"""`weightfile run --spec mtp --draft-tokens K [--proposal]` on a small `.ninfer` file with an
MTP component (spec/models.md §qwen35-mtp-round; docs/commands.md `run`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from strategies.qwen35_mtp import mtp_file

from weightfile.cli import main

RUN = ["--token-ids", "5,9,17,3", "--max-tokens", "9"]
SUMMARY = re.compile(
    r"mtp: (\d) draft tokens, (\d+) rounds, acceptance ([0-9.]+) \((\d+) of (\d+) drafts\), "
    r"([0-9.]+) tokens per round, 9 tokens"
)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return mtp_file(tmp_path_factory.mktemp("mtp") / "m.ninfer", 7, agree=0.9, proposal=20)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_spec_prints_the_plain_tokens_and_the_summary(model: Path, capsys, engine: str) -> None:
    code, plain, _ = run(capsys, str(model), *RUN, "--engine", engine)
    assert code == 0 and len(plain.split()) == 9
    for k in ("1", "3"):
        code, out, err = run(capsys, str(model), *RUN, "--engine", engine, "--spec", "mtp",
                             "--draft-tokens", k)  # fmt: skip
        assert code == 0 and out == plain
        m = SUMMARY.search(err)
        assert m is not None, err
        assert m[1] == k and int(m[4]) <= int(m[5])
        rounds, accepted = int(m[2]), int(m[4])
        assert rounds + accepted == 9 - 1  # each round emits its accepted drafts and one more
        assert float(m[6]) == pytest.approx((accepted + rounds) / rounds, abs=0.005)


def test_save_logits_adds_each_rounds_arrays(model: Path, capsys, tmp_path: Path) -> None:
    out_npz = tmp_path / "o.npz"
    code, out, _ = run(capsys, str(model), *RUN, "--spec", "mtp", "--proposal",
                       "--save-logits", str(out_npz))  # fmt: skip
    assert code == 0
    z = dict(np.load(out_npz))
    assert z["decode.tokens"].tolist() == [int(t) for t in out.split()]
    r0 = [k for k in z if k.startswith("mtp.round0.")]
    assert sorted(r0) == ["mtp.round0.accepted", "mtp.round0.draft_logits",
                          "mtp.round0.draft_tokens"]  # fmt: skip
    assert z["mtp.round0.draft_tokens"].dtype == np.int32 and z[
        "mtp.round0.draft_tokens"
    ].shape == (3,)
    assert z["mtp.round0.draft_logits"].shape == (3, 20)  # the proposal head's 20 rows
    assert z["mtp.round0.accepted"].shape == () and z["mtp.round0.accepted"].dtype == np.int32
    rounds = sum(1 for k in z if k.endswith(".accepted"))
    emitted = sum(int(z[f"mtp.round{r}.accepted"]) + 1 for r in range(rounds))
    assert emitted == 9 - 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--draft-tokens", "2"],
        ["--proposal"],
        ["--spec", "mtp", "--draft-tokens", "6"],
        ["--spec", "mtp", "--profile", "kestrel-board"],
    ],
)
def test_spec_usage_errors(model: Path, capsys, argv: list[str]) -> None:
    try:
        code = main(["run", str(model), *RUN, *argv])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    assert code == 2 and "error" in capsys.readouterr().err


def test_a_file_without_mtp_is_a_typed_error(tmp_path: Path, capsys) -> None:
    from weightfile.conformance.generate import CORPUS_DIR

    plain = CORPUS_DIR / "ninfer3/v2/model/qwen35/moe-q8-fused/model.ninfer"
    code, _, err = run(capsys, str(plain), "--token-ids", "3,14", "--spec", "mtp")
    assert code == 1 and "ninfer3.binder.component" in err and "'mtp'" in err
