"""fast == ref, bit for bit, for every operation of the board vision tower (spec/numerics.md
§board-vision), by Hypothesis: random shapes and values, hard cases included (tanhf's branch
edges, exact ties of the activation quantizer, head dims whose score tree drops products, FFN
widths that are not multiples of 32), at 1 and 3 threads."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from weightfile.fast._native import each_isa
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
@given(st.lists(finite, min_size=1, max_size=40))
def test_tanhf_and_gelu(xs: list[float]) -> None:
    x = np.array(xs, F32)
    assert same(fast.tanhf(x), [tanhf(v) for v in x])
    assert same(fast.gelu(x), ref.gelu(x))


def rows(seed: int, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.sampled_from([32, 48, 64, 96]))
def test_layernorm_patch_and_dense(seed: int, p: int, n: int) -> None:
    x, w, b = rows(seed, (p, n)), rows(seed + 1, (n,)), rows(seed + 2, (n,))
    assert same(fast.layernorm(x, w, b, F32(1e-6)), ref.layernorm(x, w, b, F32(1e-6)))
    wm = rows(seed + 3, (5, n))
    for threads in (1, 3):
        assert same(fast.patch_embed(x, wm, b[:5], threads), ref.patch_embed(x, wm, b[:5]))
        assert same(fast.dense_linear(x, wm, b[:5], threads), ref.dense_linear(x, wm, b[:5]))


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
@given(st.integers(0, 2**32 - 1), st.integers(1, 20), st.sampled_from([8, 24, 32, 72]))
def test_attention(seed: int, n: int, hd: int) -> None:
    """Including hd 24 and 72, where the score tree drops products (the engine's defect)."""
    q, k, v = rows(seed, (n, hd)), rows(seed + 1, (n, hd), 2.0), rows(seed + 2, (n, hd))
    scale = attention.attention_scale(hd)
    out, s = attention.attend(q, k, v, scale)
    for threads in (1, 3):
        fo, fs = fast.attend(q, k, v, scale, threads)
        assert same(fo, out) and same(fs, s)
