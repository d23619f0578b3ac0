"""The C RMSNorm equals ref bit for bit (spec/numerics.md §rmsnorm): r = 1 / sqrt(ss / n + eps) with
eps inside the root, then out_i = (x_i · r) · w_i, two roundings in that order. The forward-pass
tests compare whole models with a tolerance-free reference only through larger kernels; this
property pins the one kernel on every kernel path this machine runs (the portable C loop and
the SIMD forms of ops_body.h), so moving eps out of the root or reassociating the products
(tools/mutations.py c-rmsnorm-eps, c-rmsnorm-order: the portable loop) fails here."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from weightfile.fast._native import each_isa
from weightfile.fast.layers.norm import rmsnorm as fast_rmsnorm
from weightfile.ref.numerics.norm import rmsnorm as ref_rmsnorm

F32 = np.float32


@st.composite
def norm_inputs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.float32]:
    rows, n = draw(st.integers(1, 3)), draw(st.integers(1, 40))
    scale = F32(2.0 ** draw(st.integers(-12, 8)))  # small rows make eps matter
    elems = st.floats(-4, 4, width=32, allow_subnormal=False)
    x = draw(hnp.arrays(np.float32, (rows, n), elements=elems)) * scale
    w = draw(hnp.arrays(np.float32, (n,), elements=st.floats(-3, 3, width=32)))
    eps = F32(draw(st.sampled_from([1e-6, 1e-5, 1e-2, 0.0])))
    return x.astype(np.float32), w, eps


@settings(max_examples=60, deadline=None)
@given(norm_inputs())
def test_rmsnorm_fast_eq_ref(case: tuple[np.ndarray, np.ndarray, np.float32]) -> None:
    x, w, eps = case
    if eps == 0 and not np.any(x):
        return  # 1/sqrt(0): both give inf·0 = NaN; not a case the models meet
    want = np.array([ref_rmsnorm(list(row), list(w), eps) for row in x], dtype=np.float32)
    paths = list(each_isa())
    assert "portable" in paths
    for isa in each_isa():
        fast = fast_rmsnorm(x, w, eps)
        assert fast.view(np.uint32).tolist() == want.view(np.uint32).tolist(), isa


def test_rmsnorm_worked_number() -> None:
    """x = [3, 4], w = [1, 2], eps = 0: ss/n = 12.5, r = 1/sqrt(12.5) rounded to binary32, then
    (3·r)·1 and (4·r)·2 -- derived by hand in NumPy float32 steps, independent of both engines."""
    x, w = np.array([[3, 4]], F32), np.array([1, 2], F32)
    r = F32(1) / np.sqrt(F32(12.5))
    want = np.array([[(F32(3) * r) * F32(1), (F32(4) * r) * F32(2)]], F32)
    assert fast_rmsnorm(x, w, F32(0)).tobytes() == want.tobytes()
