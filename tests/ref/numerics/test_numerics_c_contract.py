"""A C implementation written from spec/numerics.md alone (tools/canonical_c/canonical.c) gives the
reference's bits for exp and the 8-lane dot when built with -ffp-contract=off
(spec/numerics.md §no-fma, §lanes8-tree, §exp); tools/c_check.py runs the exhaustive version and
shows what an FMA-contracting build changes."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.numerics.exp import exp
from weightfile.ref.numerics.reduce import dot

SOURCE = Path(__file__).resolve().parents[3] / "tools" / "canonical_c" / "canonical.c"
F32P = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    out = tmp_path_factory.mktemp("c") / "canonical.so"
    cmd = ["gcc", "-O2", "-ffp-contract=off", "-shared", "-fPIC", str(SOURCE), "-o", str(out)]
    subprocess.run([*cmd, "-lm"], check=True)
    lib = ctypes.CDLL(str(out))
    lib.wf_exp_array.argtypes = [F32P, F32P, ctypes.c_int64]
    lib.wf_dot.argtypes = [F32P, F32P, ctypes.c_int64]
    lib.wf_dot.restype = ctypes.c_float
    return lib


def test_c_exp_equals_reference_on_a_bit_pattern_sweep(lib: ctypes.CDLL) -> None:
    x = np.arange(0, 1 << 32, 65521, dtype=np.uint64).astype(np.uint32).view(np.float32)
    got = np.empty_like(x)
    lib.wf_exp_array(x, got, len(x))
    want = exp(x)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), x[~same][:5]


finite = st.floats(-(2.0**50), 2.0**50, width=32)  # products stay finite


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=70))
def test_c_dot_equals_reference(lib: ctypes.CDLL, pairs: list[tuple[float, float]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.float32)
    b = np.array([p[1] for p in pairs], dtype=np.float32)
    got = np.float32(lib.wf_dot(a, b, len(a)))
    want = dot(list(a), list(b))
    assert got.view(np.uint32) == np.float32(want).view(np.uint32) or (
        np.isnan(got) and np.isnan(want)
    )
