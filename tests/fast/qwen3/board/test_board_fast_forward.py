"""Whole forwards: the fast kestrel-board engine == the reference on random tiny Q4_0 / Q8_0
tiled files, both prompt paths, 1 and 3 threads, bit for bit (spec/numerics.md §board-forward).

The files are written by the conformance board-case writer with a drawn seed; prompts of 1-9
tokens cover the Q4 prefill's GEMM / decode-form split at n & ~3 and the attention's groups of 4.
"""

from __future__ import annotations

import dataclasses
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.families.qwen3.board_conformance import BoardCase, write_model
from weightfile.fast.qwen3.board.model import bind_board_fast
from weightfile.ref.qwen3.board.model import bind_board, generate
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.vqf.qtypes import QType

_DIR = tempfile.TemporaryDirectory(prefix="boardfast-")


@cache
def models(qtype: QType, seed: int):
    case = BoardCase("random", "", qtype, seed, (), "prefill", 0)
    path = write_model(Path(_DIR.name) / f"{qtype.name}-{seed}.vqf", case)
    with open_vqf(path) as vqf:
        ref = bind_board(vqf)
    with open_vqf(path) as vqf:
        fast = bind_board_fast(vqf)
    return ref, fast


@settings(max_examples=4, deadline=None)
@given(
    qtype=st.sampled_from([QType.Q4_0, QType.Q8_0]),
    seed=st.integers(100, 103),
    prompt=st.lists(st.integers(0, 63), min_size=1, max_size=9),
    path=st.sampled_from(["prefill", "tokenwise"]),
)
def test_fast_forward_equals_the_reference(qtype, seed, prompt, path) -> None:
    ref, fast = models(qtype, seed)
    want = generate(ref, prompt, 2, path, ops=True)
    for threads in (1, 3):
        got = generate(dataclasses.replace(fast, threads=threads), prompt, 2, path, ops=True)
        assert sorted(got) == sorted(want)
        for name, w in want.items():
            assert got[name].dtype == w.dtype, name
            assert np.array_equal(bits(got[name]), bits(w)), (name, threads)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32) if a.dtype == np.float32 else a
