"""fast reproduces the worked numbers of spec/vqf.md §f16 and §test-vectors byte for byte."""

from __future__ import annotations

import numpy as np
from strategies.codecs_vqf import WORKED_Q4_0, WORKED_Q8_0, WORKED_X, ZERO_Q4_0, ZERO_Q8_0

from weightfile.fast.codecs.vqf import _native as native
from weightfile.fast.codecs.vqf import f16, q4_0, q8_0


def test_q8_0_and_q4_0_blocks_of_the_ramp() -> None:
    assert q8_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q8_0
    assert q4_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q4_0


def test_all_zero_blocks() -> None:
    zeros = np.zeros(32, dtype=np.float32)
    assert q8_0.encode(zeros, 1, 32).hex() == ZERO_Q8_0
    assert q4_0.encode(zeros, 1, 32).hex() == ZERO_Q4_0
    assert q4_0.encode(-zeros, 1, 32).hex() == ZERO_Q4_0


def test_f16_of_1e_minus_6() -> None:
    x = np.array([1e-6], dtype=np.float32)
    assert f16.encode(x, 1, 1, mode="trunc_ftz") == b"\x00\x00"
    assert f16.encode(x, 1, 1, mode="rne") == b"\x11\x00"


def test_worked_vectors_on_the_numpy_paths_too() -> None:
    with native.disabled():
        assert native.lib() is None
        assert q8_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q8_0
        assert q4_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q4_0
        assert q4_0.encode(np.zeros(32, np.float32), 1, 32).hex() == ZERO_Q4_0
