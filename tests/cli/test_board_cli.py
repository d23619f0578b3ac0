"""`run`/`trace --profile kestrel-board`, `run --save-logits/--save-ops` and `weightfile diff`.

The board-engine case a-q4_0-tiled-p5 of tests/data/kestrel-board is the oracle: what `run`
writes must be bit for bit the engine's own `engine.npz` under the same names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main

CASE = Path(__file__).resolve().parents[1] / "data" / "kestrel-board" / "a-q4_0-tiled-p5"
MODEL, ENGINE = str(CASE / "model.vqf"), CASE / "engine.npz"
PROMPT = "1,17,42,99,256"


def board_run(out: Path, *extra: str) -> int:
    argv = ["run", MODEL, "--token-ids", PROMPT, "--max-tokens", "8", "--profile"]
    return main([*argv, "kestrel-board", "--save-logits", str(out), *extra])


@pytest.fixture(scope="module")
def prefill_dump(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("board") / "prefill.npz"
    assert board_run(out, "--save-ops") == 0
    return out


def test_run_save_logits_and_ops_are_the_engines_arrays(prefill_dump: Path) -> None:
    """Every prefill-path array of engine.npz (logits, tokens, decode.step0.*, prefill.last.*)
    is in the file under its name, bit for bit (uint32 / int32 views)."""
    with np.load(prefill_dump) as got, np.load(ENGINE) as want:
        names = [n for n in want.files if n.startswith(("prefill.", "decode."))]
        assert names and set(names) <= set(got.files)
        for n in names:
            assert got[n].dtype == want[n].dtype, n
            assert np.array_equal(got[n].view(np.uint32), want[n].view(np.uint32)), n


def test_run_tokenwise_prints_the_engines_tokens(tmp_path: Path, capsys) -> None:
    """--prompt-path tokenwise: the printed ids are the engine's decode_path.tokens and the
    logits file holds prompt.decode_path.logits [5, vocab] bit for bit."""
    out = tmp_path / "dc.npz"
    assert board_run(out, "--prompt-path", "tokenwise") == 0
    with np.load(ENGINE) as want, np.load(out) as got:
        assert capsys.readouterr().out.split() == [str(t) for t in want["decode_path.tokens"]]
        w = want["prompt.decode_path.logits"]
        assert np.array_equal(got["prompt.decode_path.logits"].view(np.uint32), w.view(np.uint32))
        assert "decode_path.step0.layer0.q_proj" not in got.files  # no --save-ops


def test_diff_of_a_dump_with_itself_the_engine_and_a_canonical_run(prefill_dump, tmp_path, capsys):
    """diff: 0 against the engine's file on the arrays both hold (--common-only; the engine's
    tokenwise path is in its file only, which without the option is a difference); 1 against
    the canonical profile's logits, naming the first differing element with both bit patterns;
    1 against a one-bit change of one op, naming that op and layer as the first divergence."""
    assert main(["diff", str(prefill_dump), str(ENGINE)]) == 1  # the tokenwise path is B's only
    assert "42 arrays in B only (not in A): prompt.decode_path.logits" in capsys.readouterr().out
    assert main(["diff", str(prefill_dump), str(ENGINE), "--common-only"]) == 0
    assert "73 of 73 common arrays bit-identical" in capsys.readouterr().out
    canon = tmp_path / "canon.npz"
    argv = ["run", MODEL, "--token-ids", PROMPT, "--max-tokens", "2", "--save-logits", str(canon)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["diff", str(canon), str(ENGINE)]) == 1
    out = capsys.readouterr().out
    assert "prefill.logits: " in out and "first [" in out and "ulps" in out
    assert "result: different" in out
    with np.load(prefill_dump) as z:
        arrays = {n: z[n] for n in z.files}
    bad = arrays["decode.step0.layer1.k_norm"].copy()
    bad.view(np.uint32)[3] ^= 1
    arrays["decode.step0.layer1.k_norm"] = bad
    changed = tmp_path / "changed.npz"
    np.savez(changed, **arrays)
    assert main(["diff", str(changed), str(prefill_dump)]) == 1
    out = capsys.readouterr().out
    assert "decode.step0.layer1.k_norm: 1 of 128 differ" in out and "max 1 ulps" in out
    assert "first divergence: decode.step0: layer 1 op k_norm" in out


def test_diff_reads_a_trace_in_the_boards_names(tmp_path: Path, capsys) -> None:
    """A canonical trace is compared as prefill.last.* / prefill.logits; it differs from the
    board (the designed difference), and the first divergence is in layer 0; with
    --common-only the decode steps the trace does not hold are not judged, and it still
    differs."""
    trace = tmp_path / "t.npz"
    assert main(["trace", MODEL, "--token-ids", PROMPT, "--out", str(trace)]) == 0
    capsys.readouterr()
    assert main(["diff", str(trace), str(ENGINE)]) == 1
    out = capsys.readouterr().out
    assert "prefill.logits [logits[-1]]: " in out
    assert "first divergence: prefill.last: layer 0" in out
    assert "not mapped: the board dumps no such array): embed, layers.0.o_proj" in out
    assert main(["diff", str(trace), str(ENGINE), "--common-only"]) == 1


def test_diff_refuses_a_file_that_is_not_a_dump(tmp_path: Path, capsys) -> None:
    """frontend.dump.format, exit 4 (unreadable, never 1 = "different"), one line; a missing
    file is exit 4 too."""
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    assert main(["diff", str(junk), str(ENGINE)]) == 4
    assert "frontend.dump.format" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "missing.npz"), str(ENGINE)]) == 4


def test_board_trace_holds_the_prompt_path_and_the_first_decode_step(tmp_path: Path) -> None:
    """trace --profile kestrel-board: input_ids, prefill.last.*, prefill.logits and
    decode.step0.* equal to the engine's."""
    out = tmp_path / "bt.npz"
    argv = ["trace", MODEL, "--token-ids", PROMPT, "--profile", "kestrel-board", "--out", str(out)]
    assert main(argv) == 0
    with np.load(out) as got, np.load(ENGINE) as want:
        assert got["input_ids"].tolist() == [1, 17, 42, 99, 256]
        for n in ("prefill.logits", "prefill.last.layer1.silu_mul", "decode.step0.logits"):
            assert np.array_equal(got[n].view(np.uint32), want[n].view(np.uint32)), n


@pytest.mark.parametrize(
    "extra",
    [
        ["--save-ops"],  # without --save-logits
        ["--save-logits", "x.npz", "--save-ops"],  # canonical has no board ops
        ["--profile", "kestrel-board", "--temperature", "0.5"],  # the board decodes greedily
    ],
)
def test_board_option_combinations_are_usage_errors(extra: list[str], tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", MODEL, "--token-ids", PROMPT, *extra]) == 2


def test_board_profile_refuses_a_ninfer_file(tmp_path: Path, capsys) -> None:
    """frontend.profile.unsupported: the board profile runs VQF files only (exit 3); the
    file's magic is enough to be refused before anything else is read."""
    ninfer = tmp_path / "m.ninfer"
    ninfer.write_bytes(b"NINFER\x00\x03" + bytes(24))
    argv = ["run", str(ninfer), "--token-ids", "1", "--profile", "kestrel-board"]
    assert main(argv) == 3
    assert "frontend.profile.unsupported" in capsys.readouterr().err
