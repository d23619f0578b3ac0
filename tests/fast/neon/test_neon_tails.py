"""NEON dot-product tails: every tail term lands in its own lane (issue 36 item 8).

fast/csrc/ops_body.h's dot (NEON: two registers of 4 lanes) adds the terms past the last whole
group of 8 one at a time into lane i mod 8 (spec/numerics.md §lanes), before the
spec/numerics.md §combining-tree tree. RMSNorm's sum of squares is that dot;
`strategies.lanes.tail_cases` gives, for every length with a tail (every n mod 8 and n mod 4),
rows where moving any one tail term to any other lane changes the output, so a kernel that
files a tail term under the wrong lane (for instance lane i mod 4, the register width) differs
from ref/numerics here. Run under
qemu-aarch64 with the folder's cross-built driver; softmax's sum of exponentials (ops_body.h's
sum, the same tail loop) meets `softmax_tail_cases` through attention, whose output is then the
probabilities themselves. The x86 paths meet the same rows in
tests/differential/test_layer_ops_isa_fast_eq_ref.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from emulated import QemuDriver, same_bits
from strategies.lanes import (
    EPS,
    LANES,
    LENGTHS,
    attention_inputs,
    model_probabilities,
    model_rmsnorm,
    softmax_tail_cases,
    tail_cases,
)
from strategies.layer_ops import ref_attend

from weightfile.ref.numerics import norm


@pytest.mark.parametrize("n", LENGTHS)
def test_every_tail_term_in_its_lane_under_neon(driver: QemuDriver, n: int) -> None:
    rows, unseparated = tail_cases(n)
    assert n < LANES or not unseparated, "some wrong lane changes no row: the rows miss a case"
    w = np.ones(n, dtype=np.float32)
    want = [norm.rmsnorm(list(r), list(w), EPS) for r in rows]
    assert [model_rmsnorm(r).view(np.uint32).tolist() for r in rows] == [
        np.array(v, dtype=np.float32).view(np.uint32).tolist() for v in want
    ], "the case model is not the spec's order"
    got = driver.run("rmsnorm", [len(rows), n, int(EPS.view(np.uint32))], rows, w)
    same_bits(got, want)


@pytest.mark.parametrize("n", LENGTHS)
def test_every_softmax_tail_term_in_its_lane_under_neon(driver: QemuDriver, n: int) -> None:
    a, unseparated = softmax_tail_cases(n)
    assert n < LANES or not unseparated, "some wrong lane changes no head: the heads miss a case"
    q, keys, values, hd = attention_inputs(a)
    m = len(a)
    want = np.array(ref_attend(q, keys, values, m, m, hd), dtype=np.float32).reshape(m, hd)
    model = np.array([model_probabilities(r, hd) for r in a], dtype=np.float32).reshape(m, n)
    assert want[:, :n].view(np.uint32).tolist() == model.view(np.uint32).tolist(), "model ≠ spec"
    same_bits(driver.run("attend_group", [n, m, m, hd], q, keys, values), want)
