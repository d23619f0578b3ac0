"""The canonical profile still gives the packs' `weightfile_canonical.npz` (a regression check).

Those arrays were written by `weightfile trace` / `weightfile run` with the canonical profile
when the packs were made; this checks the canonical side did not move while the board profile
was added. Bit patterns are compared, never floats.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from weightfile.fast.qwen3 import open_model
from weightfile.ref.layers.sampling import greedy
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf

from .test_board_packs import CASES, DATA


def canonical(case: str) -> np.lib.npyio.NpzFile:
    return np.load(DATA / case / "weightfile_canonical.npz")


@pytest.mark.parametrize("case", ["a-q4_0-tiled-p5", "a-q8_0-tiled-p5"])
def test_reference_canonical_prompt_logits_unchanged(case: str) -> None:
    """The reference decoder's prompt logits [n, vocab] equal `prompt.logits`."""
    ids = json.loads((DATA / case / "case.json").read_text())["prompt_ids"]
    with open_vqf(DATA / case / "model.vqf") as vqf:
        model = Qwen3Model(*bind_vqf(vqf))
    got = model.forward(ids, model.new_cache())
    assert np.array_equal(got.view(np.uint32), canonical(case)["prompt.logits"].view(np.uint32))


@pytest.mark.parametrize("case", CASES)
def test_canonical_run_tokens_and_teacher_forced_logits_unchanged(case: str) -> None:
    """Through the fast path (proven bit for bit equal to the reference by
    tests/differential): the 8 greedy tokens equal `run.tokens`, and the logits of prompt +
    the engine's tokens equal `engine_seq.logits` [n+8, vocab]."""
    want = canonical(case)
    ids = json.loads((DATA / case / "case.json").read_text())["prompt_ids"]
    with open_vqf(DATA / case / "model.vqf") as vqf:
        model = open_model(vqf)
        seq = model.forward(list(want["engine_seq.input_ids"]), model.new_cache())
        cache = model.new_cache()
        logits = model.forward(ids, cache)[-1]
        tokens = []
        for _ in range(8):
            tokens.append(greedy(logits))
            logits = model.forward([tokens[-1]], cache)[-1]
    assert tokens == want["run.tokens"].tolist()
    assert np.array_equal(seq.view(np.uint32), want["engine_seq.logits"].view(np.uint32))
