"""The optional C kernels: they load where a C compiler exists, and write exactly their output
(guard bytes around every output buffer stay untouched)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies.codecs_vqf import finite_f32

from weightfile.fast.codecs.vqf import _native as native

GUARD = 64


def test_kernels_load_where_a_compiler_exists() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: fast runs its NumPy paths")
    if os.environ.get("WEIGHTFILE_NO_NATIVE") == "1":
        pytest.skip("C kernels switched off by WEIGHTFILE_NO_NATIVE=1")
    assert native.lib() is not None


def test_disabled_hides_the_kernels() -> None:
    with native.disabled():
        assert native.lib() is None


def _guarded(n: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """A buffer with GUARD sentinel elements on both sides, and the inner view."""
    buf = np.full(n + 2 * GUARD, 0xA5, dtype=np.uint8).view(np.uint8)
    if dtype is np.float32:
        buf = np.full(n + 2 * GUARD, np.float32(-7.25), dtype=np.float32)
    return buf, buf[GUARD : GUARD + n]


@given(hnp.arrays(np.float32, st.integers(1, 6).map(lambda k: (k, 32)), elements=finite_f32()),
       st.sampled_from([0, 1, 2]))  # fmt: skip
def test_kernels_write_only_their_output(x: np.ndarray, mode: int) -> None:
    lib = native.lib()
    if lib is None:
        pytest.skip("C kernels unavailable")
    nb = x.shape[0]
    for fn, width, extra in (
        (lambda o: lib.vqf_q8_0_quantize(x, nb, 32, mode, o), 34, ()),
        (lambda o: lib.vqf_q4_0_quantize(x, nb, mode, 0, o), 18, ()),
        (lambda o: lib.vqf_q4_0_quantize(x, nb, mode, 1, o), 34, ()),
    ):
        buf, inner = _guarded(nb * width, np.uint8)
        fn(inner)
        assert np.all(buf[:GUARD] == 0xA5) and np.all(buf[-GUARD:] == 0xA5), extra
        payload = inner.copy()
        fbuf, finner = _guarded(nb * 32, np.float32)
        if width == 18:
            lib.vqf_q4_0_dequantize(payload, nb, finner)
        else:
            lib.vqf_q8_0_dequantize(payload, nb, finner)
        assert np.all(fbuf[:GUARD] == np.float32(-7.25)) and np.all(
            fbuf[-GUARD:] == np.float32(-7.25)
        )
