"""fast/csrc/board.c and its NEON bodies (fast/csrc/board_simd.c) built for aarch64 and run under
qemu-aarch64 give the bits the host's build gives (and so the reference's): the products in every
form on the portable, NEON and NEON + dotprod paths at 1 and 3 threads, the activation quantizer,
both RMSNorm orders and the SiLU (spec/numerics.md §board-products, §board-activations,
§board-rmsnorm, §board-exp, §kernel-paths). The board's own ISA, with its fused multiply-add
instructions, must not change a value. Built with every kernel source by tests/emulated (which
skips without the tools, except under CI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulated import QemuDriver, build_driver, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.board import close_chains, simd_products

from weightfile.fast.qwen3.board import ops
from weightfile.ref.numerics.matrix import QuantMatrix

F32 = np.float32
FORMS = (ops.FORM_Q4_DECODE, ops.FORM_SINGLE_CHAIN, ops.FORM_Q8_PREFILL)
#: The driver's products, in its order: each path at 1 and 3 threads.
RUNS = [(isa, t) for isa in ("portable", "neon", "dotprod") for t in (1, 3)]


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> QemuDriver:
    here = Path(__file__).with_name("board_driver.c")
    return build_driver(here, tmp_path_factory.mktemp("board"))


def _chain_product(chain):
    codes, bits, x = chain
    xc, dx = ops.quantize_act(x)
    return QuantMatrix(codes, bits), xc.reshape(-1), dx


@settings(max_examples=12, deadline=None)
@given(p=st.one_of(simd_products(), close_chains().map(_chain_product)))
def test_aarch64_products_on_every_path_give_the_host_bits(driver: QemuDriver, p) -> None:
    m, xc, dx = p
    rows, cols = m.codes.shape
    with np.errstate(all="ignore"):
        want = np.concatenate([ops._matvec(m, xc, dx, f, 1) for f in FORMS])
    raw = [m.codes.tobytes(), m.scale_bits.astype("<u2").tobytes(), xc.astype(np.int8).tobytes()]
    got = driver.run("products", [rows, cols], *raw, dx)
    for run, part in zip(RUNS, np.split(got, len(RUNS)), strict=True):
        try:
            same_bits(part, want)  # NaNs compare as NaN: Arm's default NaN is positive
        except AssertionError as e:
            raise AssertionError(f"{run}: {e}") from None


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_aarch64_act_norms_silu_give_the_host_bits(driver: QemuDriver, seed: int, blocks) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(32 * blocks) * 3).astype(F32)
    x[::7] = np.round(x[::7] * 2) / 2  # half-integers: quantizer ties when amax is 127
    codes, scales = ops.quantize_act(x)
    want = [codes.reshape(-1).astype(F32), scales]
    want += [ops.rmsnorm_tree8(x, x, F32(1e-6)), ops.rmsnorm_sequential(x, x, F32(1e-6))]
    want.append(ops.silu_mul(x, x))
    same_bits(driver.run("act", [x.size], x), np.concatenate(want))
