"""ref reproduces the worked numbers of spec/vqf.md §f16 and §test-vectors byte for byte."""

from __future__ import annotations

import numpy as np
from strategies.codecs_vqf import WORKED_Q4_0, WORKED_Q8_0, WORKED_X, ZERO_Q4_0, ZERO_Q8_0

from weightfile.ref.codecs.vqf import f16, q4_0, q8_0


def test_q8_0_block_of_the_ramp() -> None:
    assert q8_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q8_0


def test_q4_0_block_of_the_ramp() -> None:
    assert q4_0.encode(WORKED_X, 1, 32).hex() == WORKED_Q4_0
    d = q4_0.decode_words(bytes.fromhex(WORKED_Q4_0), 1, 32)["scales"]
    assert np.float16(-0.2375).view(np.uint16) == d[0, 0] == 0xB39A


def test_all_zero_blocks() -> None:
    zeros = np.zeros(32, dtype=np.float32)
    assert q8_0.encode(zeros, 1, 32).hex() == ZERO_Q8_0
    assert q4_0.encode(zeros, 1, 32).hex() == ZERO_Q4_0
    # -0 is an all-zero block too (spec/vqf.md §quant-q4-0)
    assert q4_0.encode(-zeros, 1, 32).hex() == ZERO_Q4_0


# spec/vqf.md §f16: truncating FTZ gives 0x0000, RNE gives 0x0011
def test_f16_of_1e_minus_6() -> None:
    x = np.array([1e-6], dtype=np.float32)
    assert f16.encode(x, 1, 1, mode="trunc_ftz") == b"\x00\x00"
    assert f16.encode(x, 1, 1, mode="rne") == b"\x11\x00"
