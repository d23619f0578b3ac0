"""The fast kestrel-board engine reproduces the board engine's own outputs bit for bit.

The oracle is tests/data/kestrel-board/ (the engine's `engine.npz`, computed by the Kestrel
engine's code under qemu; nothing in it comes from weightfile). The comparison helpers are the
reference tests' (tests/ref/qwen3/board/test_board_packs.py): uint32 bit patterns for floats,
exact int32 for token ids, never a tolerance. Each case runs with 1 thread on one prompt path and
3 threads on the other, so both thread counts meet every case, on every kernel path this CPU
runs (portable C and the SIMD bodies of fast/csrc/board_simd.c; NEON in test_board_aarch64.py).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.fast._native import forced_isa, usable_isas
from weightfile.fast.backend import FAST
from weightfile.fast.qwen3.board.model import FastBoardModel, bind_board_fast
from weightfile.frontend.dispatch import load_session
from weightfile.ref.backend import REFERENCE
from weightfile.ref.qwen3.board.model import generate
from weightfile.ref.vqf.read import open_vqf

_REF = Path(__file__).resolve().parents[3] / "ref" / "qwen3" / "board" / "test_board_packs.py"
_spec = importlib.util.spec_from_file_location("board_pack_helpers", _REF)
packs = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(packs)  # type: ignore[union-attr]


def test_the_eight_cases_are_here() -> None:
    """Missing oracle data fails, never skips."""
    assert len(packs.CASES) == 8, packs.CASES


@cache
def fast_model(case: str, threads: int) -> FastBoardModel:
    with open_vqf(packs.DATA / case / "model.vqf") as vqf:
        return bind_board_fast(vqf, threads=threads)


@pytest.mark.parametrize("isa", usable_isas() or ["portable"])
@pytest.mark.parametrize("path", ["prefill", "tokenwise"])
@pytest.mark.parametrize("case", packs.CASES)
def test_fast_board_engine_reproduces_the_engine_bit_for_bit(
    case: str, path: str, isa: str
) -> None:
    """Every array the engine dumped for this prompt path, bit for bit: the prompt path's
    logits (`prefill.logits` or every row of `prompt.decode_path.logits`), the 8 greedy tokens,
    the 8 decode steps' logits and every per-op intermediate (`*.step0.*`, `prefill.last.*`)."""
    threads = 1 if (path == "prefill") == ("q4" in case) else 3
    want = packs.engine_arrays(case, path)
    with forced_isa(isa):
        got = generate(fast_model(case, threads), packs.prompt(case), packs.STEPS, path, ops=True)
    assert set(want) <= set(got), f"not computed: {sorted(set(want) - set(got))}"
    wrong = [
        packs.first_difference(n, got[n], w)
        for n, w in sorted(want.items())
        if got[n].shape != w.shape or not np.array_equal(packs.bits(got[n]), packs.bits(w))
    ]
    assert wrong == [], wrong


def test_engine_fast_binds_the_fast_board_model_without_a_note() -> None:
    """`--engine fast --profile kestrel-board` runs the C kernels, not the reference."""
    path = packs.DATA / "a-q8_0-tiled-p5" / "model.vqf"
    s = load_session(path, None, False, FAST, threads=2, profile="kestrel-board")
    assert isinstance(s.model, FastBoardModel) and s.model.threads == 2 and s.note is None
    r = load_session(path, None, False, REFERENCE, profile="kestrel-board")
    assert not isinstance(r.model, FastBoardModel)


def test_run_engine_fast_writes_the_engines_arrays(tmp_path: Path, capsys) -> None:
    """`run --engine fast --threads 2 --save-logits --save-ops` (token-wise path) and
    `trace --engine fast` (prefill path) write the engine's arrays bit for bit."""
    case = packs.DATA / "c-q4_0-tiled-p11"
    ids = ",".join(str(t) for t in packs.prompt("c-q4_0-tiled-p11"))
    out = tmp_path / "dc.npz"
    argv = ["run", str(case / "model.vqf"), "--token-ids", ids, "--max-tokens", "8"]
    argv += ["--profile", "kestrel-board", "--engine", "fast", "--threads", "2"]
    assert main([*argv, "--prompt-path", "tokenwise", "--save-logits", str(out), "--save-ops"]) == 0
    assert "note:" not in capsys.readouterr().err
    tr = tmp_path / "tr.npz"
    targv = ["trace", str(case / "model.vqf"), "--token-ids", ids, "--profile", "kestrel-board"]
    assert main([*targv, "--engine", "fast", "--out", str(tr)]) == 0
    with np.load(case / "engine.npz") as want, np.load(out) as got, np.load(tr) as trace:
        names = [n for n in want.files if n.startswith(("prompt.decode_path.", "decode_path."))]
        assert names and set(names) <= set(got.files)
        for n in names:
            assert np.array_equal(packs.bits(got[n]), packs.bits(want[n])), n
        for n in ("prefill.logits", "prefill.last.layer0.q_rope", "decode.step0.logits"):
            assert np.array_equal(packs.bits(trace[n]), packs.bits(want[n])), n
