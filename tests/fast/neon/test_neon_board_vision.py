"""fast/csrc/board_vision.c under qemu-aarch64 equals the board reference bit for bit
(spec/numerics.md §board-vision): the Q8 linears' sdot rows, the patch embedding, the attention
and the mergers with a lane an output (board_vision_body.h), and the GELU's emulated tanhf in
work items of 4096 elements. The shapes reach the NEON bodies' whole vectors and the tails
left to the portable loops. Without the tools the tests skip, except under CI (tests/emulated)."""

from __future__ import annotations

import os

import numpy as np
from emulated import QemuDriver, same_bits
from hypothesis import example, given, settings
from hypothesis import strategies as st

from weightfile.fast._native import forced_isa
from weightfile.fast.qwen3_vl.board import ops as fast
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.board import attention, linear
from weightfile.ref.qwen3_vl.board import ops as ref
from weightfile.ref.qwen3_vl.board.tanhf import tanhf

F32 = np.float32
NEON, DOTPROD = 1, 2  #: fast/csrc/cpu.h's WF_ISA_NEON, WF_ISA_DOTPROD


def run_on(driver: QemuDriver, isa: int, op: str, params: list[int], *arrays) -> np.ndarray:
    """The driver's answer on kernel path `isa` (tests/fast/neon/driver.c, WF_DRIVER_ISA)."""
    before = os.environ.get("WF_DRIVER_ISA")
    os.environ["WF_DRIVER_ISA"] = str(isa)
    try:
        return driver.run(op, params, *arrays)
    finally:
        if before is None:
            del os.environ["WF_DRIVER_ISA"]
        else:
            os.environ["WF_DRIVER_ISA"] = before


def wild(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values times 2^e, e in [-40, 40]: products of every size, so a sum taken in
    another order, or an FMA split in two roundings, shows in the result."""
    e = rng.integers(-40, 41, shape)
    return (rng.standard_normal(shape) * np.exp2(e)).astype(F32)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, 5), k=st.sampled_from([32, 64, 96]),
       rows=st.sampled_from([1, 4, 7, 9]))  # fmt: skip
@example(seed=3, p=2, k=64, rows=7)
def test_q8_linear_under_neon(driver: QemuDriver, seed: int, p: int, k: int, rows: int) -> None:
    """Whole groups of four rows and the rest, with and without dotprod; ±127 codes and the
    activation quantizer's ties."""
    rng = np.random.default_rng(seed)
    x = (rng.integers(-127, 128, (p, k)) / F32(127.0)).astype(F32) * F32(0.5)
    x[0] = rng.standard_normal(k).astype(F32)
    codes = rng.integers(-127, 128, (rows, k)).astype(np.int8)
    codes[0, :8] = (127, -127, 127, -127, -127, -127, 127, 127)
    m = QuantMatrix(codes, np.float16(rng.uniform(1e-3, 1e-1, (rows, k // 32))).view(np.uint16))
    b = rng.standard_normal(rows).astype(F32)
    xc, d16 = fast.quantize_rows(x)
    dw = m.scale_bits.view(np.float16).astype(F32)
    want = linear.q8_linear(m, b, x)
    for isa in (NEON, DOTPROD):  # the int16 products paired, and sdot
        got = run_on(driver, isa, "bv_q8", [p, k, rows, 2], xc.tobytes(), d16, codes.tobytes(),
                     dw, b)  # fmt: skip
        same_bits(got, want)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, 4), k=st.sampled_from([12, 30, 48]),
       out=st.sampled_from([3, 4, 9, 16]))  # fmt: skip
def test_patch_embed_under_neon(driver: QemuDriver, seed: int, p: int, k: int, out: int) -> None:
    """Channels in vectors of four and the rest; k = 30 has the scalar tail after the lanes."""
    rng = np.random.default_rng(seed)
    x, w, b = wild(rng, (p, k)), wild(rng, (out, k)), rng.standard_normal(out).astype(F32)
    same_bits(driver.run("bv_patch", [p, k, out, 2], x, w, b), ref.patch_embed(x, w, b))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), t=st.integers(1, 5), k=st.sampled_from([8, 33, 64]),
       rows=st.sampled_from([3, 8, 13, 16]))  # fmt: skip
def test_dense_linear_under_neon(driver: QemuDriver, seed: int, t: int, k: int, rows: int) -> None:
    """Blocks of eight rows for tokens two at a time (an odd count pads a lane), other rows
    left to the portable loop; wild magnitudes, and products ±2^90 at inputs 0 and 1 that
    cancel only when the binary64 sum runs from input 0 up."""
    rng = np.random.default_rng(seed)
    x, w, b = wild(rng, (t, k)), wild(rng, (rows, k)), rng.standard_normal(rows).astype(F32)
    x[:, :2], w[:, :2] = (2.0**45, -(2.0**45)), 2.0**45
    same_bits(driver.run("bv_dense", [t, k, rows, 2], x, w, b), ref.dense_linear(x, w, b))


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), n=st.integers(1, 11), hd=st.sampled_from([4, 24, 32, 64, 72])
)
def test_attention_under_neon(driver: QemuDriver, seed: int, n: int, hd: int) -> None:
    """Keys in blocks of four and the rest; head dims whose score tree drops products (24, 72)
    and the one-vector tree (4); output elements four vectors at a time and one at a time."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, hd)).astype(F32) * F32(s) for s in (1.0, 2.0, 1.0))
    scale = attention.attention_scale(hd)
    got = driver.run("bv_attend", [n, hd, int(np.float32(scale).view(np.uint32)), 2], q, k, v)
    out, scores = attention.attend(q, k, v, scale)
    same_bits(got, np.concatenate([out.ravel(), scores.ravel()]))


def test_gelu_under_neon(driver: QemuDriver) -> None:
    """Two work items of 4096 and a tail at 3 threads, every branch of the emulated tanhf: inputs
    of every size, zeros, infinities, a NaN, subnormals."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(2 * 4096 + 37) * np.exp2(rng.integers(-30, 6, 2 * 4096 + 37))
    x = x.astype(F32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 3e38]
    same_bits(driver.run("bv_gelu", [x.size, 3], x), ref.gelu(x))


def test_tanhf_under_neon(driver: QemuDriver) -> None:
    """Every branch edge of the emulated tanhf and expm1f, ±3 ulps around it, both signs, in
    every lane of the vectors of four, and the specials."""
    edges = np.array([0x3EB17218, 0x3F851592, 0x3F800000, 0x41B00000, 0x24000000, 0x4195B844,
                      0x3F000000, 0x33000000, 0x7F7FFFFF, 0x00000001], np.int64)  # fmt: skip
    near = (edges[:, None] + np.arange(-3, 4)).clip(0, 0x7F7FFFFF).astype(np.uint32).view(F32)
    rng = np.random.default_rng(5)
    x = np.concatenate([near.ravel(), -near.ravel(), (rng.standard_normal(97) * 8).astype(F32)])
    x = np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], F32)])
    rng.shuffle(x)
    same_bits(driver.run("bv_tanhf", [x.size], x), [tanhf(v) for v in x])


def test_tanhf_vectors_on_many_inputs_under_neon(driver: QemuDriver) -> None:
    """2^18 arguments of every size through the NEON tanhf against this machine's portable C
    loop (the reference's bits: tests/fast/qwen3_vl/board): a rounding step that differs on one
    input in a few thousand shows here."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(1 << 18) * np.exp2(rng.integers(-30, 6, 1 << 18))).astype(F32)
    with forced_isa("portable"):
        want = fast.tanhf(x)
    same_bits(driver.run("bv_tanhf", [x.size], x), want)
