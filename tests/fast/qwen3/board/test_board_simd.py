"""The board products' SIMD bodies (fast/csrc/board_simd.c: AVX2, AVX-512 + VNNI) equal the
portable rows of fast/csrc/board.c bit for bit (spec/numerics.md §board-products, §kernel-paths).

The portable rows are the oracle here (tests/fast/qwen3/board/test_board_fast_ops.py proves them
equal to the reference). The inputs go past what the model hands the kernel: activation codes
down to −128 (the quantizer stops at ±127, the kernel's contract is any int8), weight codes at
−128/127, f16 scale bits over every finite pattern (subnormals included), activation scales
from subnormal to near the float32 maximum (products that overflow to ±inf and inf − inf), row
counts that leave tails of every length beside whole tiles of 8 (x86) or 4 (NEON, under qemu in
test_board_aarch64.py), values built to tie (rows that repeat one another, pairs of blocks
whose products cancel), and tests/strategies/board.py's `close_chains`, whose terms are of one
magnitude so that fused and unfused chains round apart in many rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.board import close_chains, simd_products

from weightfile.fast._native import forced_isa, usable_isas
from weightfile.fast.qwen3.board import ops
from weightfile.ref.numerics.matrix import QuantMatrix

F32 = np.float32
SIMD = [isa for isa in usable_isas() if isa != "portable"]
FORMS = [ops.FORM_Q4_DECODE, ops.FORM_SINGLE_CHAIN, ops.FORM_Q8_PREFILL]


def _quantized(chain: tuple[np.ndarray, np.ndarray, np.ndarray]):
    codes, bits, x = chain
    xc, dx = ops.quantize_act(x)
    return QuantMatrix(codes, bits), xc.reshape(-1), dx


def bits_of(y: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(y, F32).view(np.uint32)


@pytest.mark.skipif(not SIMD, reason="no SIMD kernel path on this CPU")
@settings(max_examples=200, deadline=None)
@given(
    p=st.one_of(simd_products(), close_chains().map(_quantized)),
    form=st.sampled_from(FORMS),
    threads=st.sampled_from([1, 3]),
)
def test_simd_bodies_give_the_portable_bits(p, form: int, threads: int) -> None:
    m, xc, dx = p
    with np.errstate(all="ignore"), ops.thread_grain(1):
        with forced_isa("portable"):
            want = bits_of(ops._matvec(m, xc, dx, form, 1))
        for isa in SIMD:
            with forced_isa(isa):
                got = bits_of(ops._matvec(m, xc, dx, form, threads))
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, f"{isa}: row {bad[0]} {got[bad[0]]:#x} != {want[bad[0]]:#x}"


@pytest.mark.skipif(not SIMD, reason="no SIMD kernel path on this CPU")
def test_a_tile_and_its_tail_reach_the_simd_body() -> None:
    """Guards the property above against testing nothing: 27 rows run as tiles of 8 and a tail
    of 3 on every SIMD path, over an odd number of blocks, and a row whose dots need
    −128·−128 gives the exact value there (the AVX2 maddubs shortcut of the canonical kernels
    would saturate it)."""
    rows, cols = 27, 96
    codes = np.full((rows, cols), -128, np.int8)
    xc = np.full(cols, -128, np.int8)
    bits = np.full((rows, 3), 0x3C00, np.uint16)  # f16 1.0
    dx = np.ones(3, F32)
    for isa in SIMD:
        with forced_isa(isa):
            y = ops._matvec(QuantMatrix(codes, bits), xc, dx, ops.FORM_SINGLE_CHAIN, 1)
        assert np.array_equal(y, np.full(rows, 3 * 32 * 128 * 128, F32)), isa
