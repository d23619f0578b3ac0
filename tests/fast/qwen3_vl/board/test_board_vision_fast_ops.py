"""fast == ref, bit for bit, for every operation of the board vision tower (spec/numerics.md
§board-vision), by Hypothesis: random shapes and values, hard cases included (tanhf's branch
edges, exact ties of the activation quantizer, head dims whose score tree drops products, FFN
widths that are not multiples of 32), at 1 and 3 threads."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from weightfile.fast._native import each_isa, forced_isa
from weightfile.fast.qwen3_vl.board import ops as fast
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.board import attention, linear
from weightfile.ref.qwen3_vl.board import ops as ref
from weightfile.ref.qwen3_vl.board.tanhf import tanhf

F32 = np.float32
EDGES = (0x3EB17218, 0x3F851592, 0x3F800000, 0x41B00000, 0x24000000, 0x4195B844, 0x00000001)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


edge_floats = st.sampled_from(EDGES).flatmap(
    lambda e: st.integers(-3, 3).map(lambda d: np.uint32(max(e + d, 0)).view(F32))
)
finite = st.floats(-60, 60, width=32) | edge_floats | edge_floats.map(lambda x: -x)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=70))
def test_tanhf_and_gelu(xs: list[float]) -> None:
    """On every kernel path: up to 70 elements, so vectors of 16 or 8 lanes (every branch
    computed, each lane taking its own) and the scalar rest, the branch edges in any lane."""
    x = np.array(xs, F32)
    want_tanhf, want_gelu = [tanhf(v) for v in x], ref.gelu(x)
    for _isa in each_isa():
        assert same(fast.tanhf(x), want_tanhf)
        assert same(fast.gelu(x), want_gelu)


def rows(seed: int, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def many_arguments(count: int, seed: int) -> np.ndarray:
    """Normal values times 2^e, e in [-30, 5]: every branch of expm1f and tanhf, most of them
    far from the edges the properties above aim at."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(count) * np.exp2(rng.integers(-30, 6, count))).astype(F32)


def test_tanhf_and_gelu_vectors_equal_the_portable_loop_on_many_inputs() -> None:
    """2^20 arguments on every SIMD path against the portable C loop (itself the reference's
    bits, above): a rounding step that differs on one input in a few thousand — a fused step
    done in two roundings, a correction term left out — shows here, where sixty small draws
    would miss it. (All 2^32 inputs agreed on avx2 and avx512 when the vectors were written.)"""
    x = many_arguments(1 << 20, 11)
    with forced_isa("portable"):
        want_tanhf, want_gelu = fast.tanhf(x), fast.gelu(x, 2)
    for isa in each_isa():
        if isa != "portable":
            assert same(fast.tanhf(x), want_tanhf) and same(fast.gelu(x, 2), want_gelu), isa


def test_gelu_in_work_items() -> None:
    """Two work items of 4096 elements and a tail at 1 and 3 threads, on every kernel path (the
    x86 ones inline fmaf as the FMA instruction): inputs of every size, zeros, infinities, a
    NaN, subnormals."""
    rng = np.random.default_rng(7)
    n = 2 * 4096 + 37
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 6, n))).astype(F32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 3e38]
    want = ref.gelu(x)
    for _isa in each_isa():
        for threads in (1, 3):
            assert same(fast.gelu(x, threads), want)


def wild(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values times 2^e, e in [-40, 40]: products of every size, so a sum taken in
    another order, or an FMA split into two roundings, shows in the result."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-40, 41, shape))).astype(F32)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.sampled_from([32, 48, 64, 96]))
def test_layernorm(seed: int, p: int, n: int) -> None:
    x, w, b = rows(seed, (p, n)), rows(seed + 1, (n,)), rows(seed + 2, (n,))
    assert same(fast.layernorm(x, w, b, F32(1e-6)), ref.layernorm(x, w, b, F32(1e-6)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 20), st.sampled_from([12, 30, 48, 96]),
       st.sampled_from([5, 16, 20, 37]), st.booleans())  # fmt: skip
@example(1, 3, 30, 37, True)
def test_patch_embed(seed: int, p: int, k: int, out: int, big: bool) -> None:
    """Channels in vectors of 16 (AVX-512) or 8 (AVX2) and the rest in the portable loop; k = 30
    has the scalar tail after the four lanes."""
    make = wild if big else rows
    x, w, b = make(seed, (p, k)), make(seed + 1, (out, k)), rows(seed + 2, (out,))
    want = ref.patch_embed(x, w, b)
    for _isa in each_isa():
        for threads in (1, 3):
            assert same(fast.patch_embed(x, w, b, threads), want)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 20), st.sampled_from([8, 33, 64]),
       st.sampled_from([5, 8, 13, 24]), st.booleans())  # fmt: skip
@example(2, 11, 33, 13, True)
def test_dense_linear(seed: int, t: int, k: int, n_rows: int, big: bool) -> None:
    """Blocks of eight rows for tokens eight (AVX-512) or four (AVX2) at a time, the last group
    padded, the rows after the last block in the portable loop. `big`: wild magnitudes, and
    products ±2^90 at inputs 0 and 1 that cancel only when the sum runs from input 0 up (any
    other order lets them swallow the rest first)."""
    make = wild if big else rows
    x, w, b = make(seed, (t, k)), make(seed + 1, (n_rows, k)), rows(seed + 2, (n_rows,))
    if big:
        x[:, :2], w[:, :2] = (2.0**45, -(2.0**45)), 2.0**45
    want = ref.dense_linear(x, w, b)
    for _isa in each_isa():
        for threads in (1, 3):
            assert same(fast.dense_linear(x, w, b, threads), want)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 20), st.sampled_from([32, 64, 96]),
       st.booleans(), st.sampled_from([7, 16, 39]))  # fmt: skip
@example(5, 3, 64, False, 39)
def test_q8_linear(seed: int, p: int, k: int, ties: bool, n_rows: int) -> None:
    """ties: inputs on a grid of 127ths of the block maximum, so x/d + 0.5 lands on integers
    (the truncation's hard case). 16 and 39 rows reach the avx512 path's tiles of 16 rows (39:
    two tiles and 7 rows left to the scalar loop); every kernel path usable here runs, extreme
    codes (±127, -128's neighbour) included."""
    rng = np.random.default_rng(seed)
    x = rows(seed, (p, k))
    if ties:
        x = (rng.integers(-127, 128, (p, k)) / F32(127.0)).astype(F32) * F32(0.5)
    codes = rng.integers(-127, 128, (n_rows, k)).astype(np.int8)
    codes[0, :8] = (127, -127, 127, -127, -127, -127, 127, 127)
    m = QuantMatrix(codes, np.float16(rng.uniform(1e-3, 1e-1, (n_rows, k // 32))).view(np.uint16))
    b = rows(seed + 1, (n_rows,))
    want = linear.q8_linear(m, b, x)
    for _isa in each_isa():
        for threads in (1, 3):
            assert same(fast.q8_linear(m, b, x, threads), want)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([4, 8, 24, 32, 64, 72]))
@example(9, 37, 72)
@example(4, 17, 4)
def test_attention(seed: int, n: int, hd: int) -> None:
    """Including hd 24 and 72, where the score tree drops products (the engine's defect), and 4,
    a tree of one vector; keys in blocks of 16 or 8 and the rest, output elements four vectors
    at a time, one at a time and in the portable loop, on every kernel path."""
    q, k, v = rows(seed, (n, hd)), rows(seed + 1, (n, hd), 2.0), rows(seed + 2, (n, hd))
    scale = attention.attention_scale(hd)
    out, s = attention.attend(q, k, v, scale)
    for _isa in each_isa():
        for threads in (1, 3):
            fo, fs = fast.attend(q, k, v, scale, threads)
            assert same(fo, out) and same(fs, s)
