"""The kestrel-board profile reproduces the board engine's own outputs bit for bit.

The oracle is tests/data/kestrel-board/: eight cases (two tiny Qwen3 geometries x Q4_0 / Q8_0
x two prompts) whose `engine.npz` the Kestrel engine's code computed (built for aarch64, run
under qemu; README.md there). Nothing in these numbers comes from weightfile. Every comparison
is of uint32 bit patterns (int32 for token ids), never of floats with a tolerance.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from weightfile.ref.qwen3.board.model import BoardModel, bind_board, generate
from weightfile.ref.vqf.read import open_vqf

DATA = Path(__file__).resolve().parents[3] / "data" / "kestrel-board"
CASES = sorted(p.name for p in DATA.glob("*-tiled-*")) if DATA.is_dir() else []
STEPS = 8  # the packs' greedy continuation length


def test_the_eight_board_cases_are_in_the_tree() -> None:
    """The oracle is test data in the repository; missing data fails, it never skips."""
    assert len(CASES) == 8, f"expected 8 cases in {DATA}, found {CASES}"
    for case in CASES:
        for f in ("model.vqf", "case.json", "engine.npz", "weightfile_canonical.npz"):
            assert (DATA / case / f).is_file(), f"{case}/{f} missing"


@cache
def board_model(case: str) -> BoardModel:
    with open_vqf(DATA / case / "model.vqf") as vqf:
        return bind_board(vqf)


def prompt(case: str) -> list[int]:
    return json.loads((DATA / case / "case.json").read_text())["prompt_ids"]


def engine_arrays(case: str, path: str) -> dict[str, np.ndarray]:
    """The engine's arrays of one prompt path: prefill.* and decode.*, or the decode_path ones."""
    z = np.load(DATA / case / "engine.npz")
    tokenwise = ("prompt.decode_path.", "decode_path.")
    mine = tokenwise if path == "tokenwise" else ("prefill.", "decode.")
    return {n: z[n] for n in z.files if n.startswith(mine)}


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32) if a.dtype == np.float32 else a


def first_difference(name: str, got: np.ndarray, want: np.ndarray) -> str:
    idx = int(np.flatnonzero(bits(got).ravel() != bits(want).ravel())[0])
    g, w = bits(got).ravel()[idx], bits(want).ravel()[idx]
    return f"{name}[{idx}]: ours 0x{int(g):08x}, engine 0x{int(w):08x}"


@pytest.mark.parametrize("path", ["prefill", "tokenwise"])
@pytest.mark.parametrize("case", CASES)
def test_board_profile_reproduces_the_engine_bit_for_bit(case: str, path: str) -> None:
    """Every array the engine dumped for this prompt path, bit for bit:
    * `prefill.logits` (last prompt position of the batched prefill) or
      `prompt.decode_path.logits` (every prompt position, token by token through decode);
    * the 8 greedy tokens (`decode.tokens` / `decode_path.tokens`, int32, exact);
    * the 8 decode steps' logits (`*.step{k}.logits`);
    * the first decode step's per-op intermediates of every dumped layer (`*.step0.*`) and, on
      the prefill path, the last prompt token's (`prefill.last.*`)."""
    want = engine_arrays(case, path)
    got = generate(board_model(case), prompt(case), STEPS, path, ops=True)
    assert set(want) <= set(got), f"not computed: {sorted(set(want) - set(got))}"
    wrong = [
        first_difference(n, got[n], w)
        for n, w in sorted(want.items())
        if got[n].shape != w.shape or not np.array_equal(bits(got[n]), bits(w))
    ]
    assert wrong == [], wrong


def test_the_two_prompt_paths_differ_as_the_engine_says() -> None:
    """Guard that the comparison can fail: the batched prefill and the token-wise path give
    different last-position logits (the engine's documented non-equality), so a forward pass
    that ignored the path could not pass both tests above."""
    case = "a-q4_0-tiled-p5"
    z = np.load(DATA / case / "engine.npz")
    pf, dc = z["prefill.logits"], z["prompt.decode_path.logits"][-1]
    assert not np.array_equal(bits(pf), bits(dc))
