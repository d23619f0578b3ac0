"""fast.qwen3.board.ops == ref.qwen3.board, bit for bit, one operation at a time
(spec/numerics.md §board-quantizers, §board-products, §board-rmsnorm, §board-exp, §board-rope,
§board-attention).

The strategies aim at the hard cases: activation values on the x/d + 0.5 ties (amax 127 makes
d = 1 exactly, so half-integers tie), subnormals and the largest finite floats, f16 scale bits
including subnormals, Q4 and Q8 code ranges, exp inputs beyond the ±87 clamp, attention over
1-9 positions (the exp_neon4 groups of 4 and the libm tail). Products and attention run with 1
and 3 threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from weightfile.fast.qwen3.board import ops
from weightfile.fast.qwen3.board.model import FastKV
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board import attention as ref_att
from weightfile.ref.qwen3.board import expsilu as ref_exp
from weightfile.ref.qwen3.board import matmul as ref_mm
from weightfile.ref.qwen3.board import norm as ref_norm
from weightfile.ref.qwen3.board import quant as ref_q
from weightfile.ref.qwen3.board import rope as ref_rope

F32 = np.float32
EXAMPLES = settings(max_examples=25, deadline=None)

#: Values that sit on rounding boundaries of the board's quantizers, and extremes.
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -126.5, 126.5, 127.0, -127.0, 1e-45, -1e-45,
           1.1754942e-38, 3.4028235e38, -3.4028235e38, 1e-10, 1e-6, 63.5, -63.5]  # fmt: skip
elem = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(-254, 254).map(lambda k: k / 2),  # half-integers: ties when d = 1
    st.floats(-1e4, 1e4, width=32),
    st.floats(width=32, allow_nan=False, allow_infinity=False),
)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float32 or b.dtype == np.float32:
        return a.shape == b.shape and np.array_equal(
            a.astype(F32).view(np.uint32), b.astype(F32).view(np.uint32)
        )
    return a.shape == b.shape and np.array_equal(a.astype(np.int64), b.astype(np.int64))


@st.composite
def vectors(draw, blocks: st.SearchStrategy | None = None, tie_block=True) -> np.ndarray:
    n = draw(blocks if blocks is not None else st.integers(1, 2)) * 32
    x = draw(hnp.arrays(F32, n, elements=elem))
    if tie_block and draw(st.booleans()):
        x[draw(st.integers(0, n - 1))] = F32(127.0)  # with |x| <= 127 elsewhere: d = 1
        x = np.where(np.abs(x) > 127, F32(0.5), x).astype(F32)
    return x


@EXAMPLES
@given(vectors())
def test_activation_quantizer(x: np.ndarray) -> None:
    (c, d), (rc, rd) = ops.quantize_act(x), ref_q.quantize_act(x)
    assert same(c, rc) and same(d, rd)


@EXAMPLES
@given(vectors(blocks=st.integers(1, 3)))
def test_query_and_kv_quantizers(x: np.ndarray) -> None:
    (c, d), (rc, rd) = ops.quantize_query(x), ref_q.quantize_query(x)
    assert same(c, rc) and same(d, rd)
    (kc, ks), (rkc, rks) = ops.quantize_kv(x), ref_q.quantize_kv(x)
    assert same(kc[0], rkc) and same(ks[0], rks)


f16_finite = st.integers(0, 0xFFFF).filter(lambda b: (b >> 10) & 0x1F != 0x1F)


@st.composite
def matrices(draw) -> tuple[QuantMatrix, np.ndarray]:
    rows, blocks = draw(st.integers(1, 9)), draw(st.integers(1, 3))
    lo, hi = draw(st.sampled_from([(-8, 7), (-127, 127), (-128, 127)]))
    codes = draw(hnp.arrays(np.int8, (rows, blocks * 32), elements=st.integers(lo, hi)))
    bits = draw(hnp.arrays(np.uint16, (rows, blocks), elements=f16_finite))
    return QuantMatrix(codes, bits), draw(vectors(blocks=st.just(blocks)))


FORMS = [
    (ops.q4_decode, ref_mm.q4_decode),
    (ops.single_chain, ref_mm.single_chain),
    (ops.q4_prefill_gemm, ref_mm.q4_prefill_gemm),
    (ops.q8_prefill_gemm, ref_mm.q8_prefill_gemm),
]


@pytest.mark.parametrize("fast, ref", FORMS, ids=["q4_decode", "chain", "q4_gemm", "q8_gemm"])
@settings(max_examples=20, deadline=None)
@given(mx=matrices(), threads=st.sampled_from([1, 3]))
def test_products(fast, ref, mx, threads: int) -> None:
    m, x = mx
    codes, d = ref_q.quantize_act(x)
    with np.errstate(over="ignore", invalid="ignore"):  # f16(d) may overflow to inf
        want, got = ref(m, codes, d), fast(m, codes, d, threads)
    assert same(got, want)


@EXAMPLES
@given(
    hnp.arrays(F32, st.integers(1, 70), elements=st.floats(-1e3, 1e3, width=32)),
    st.sampled_from([F32(1e-6), F32(1e-5)]),
)
def test_norm_orders(x: np.ndarray, eps: np.float32) -> None:
    w = (np.arange(x.size, dtype=F32) / F32(7.0)) - F32(3.0)
    assert same(ops.rmsnorm_tree8(x, w, eps), ref_norm.rmsnorm_tree8(x, w, eps))
    assert same(ops.rmsnorm_sequential(x, w, eps), ref_norm.rmsnorm_sequential(x, w, eps))
    hd = 32
    v, wh = np.resize(x, 3 * hd).astype(F32), np.resize(w, hd).astype(F32)
    assert same(ops.head_norms(v, wh, hd), ref_norm.head_norms(v, wh, hd))


@EXAMPLES
@given(hnp.arrays(F32, st.integers(1, 64), elements=st.floats(-120, 120, width=32)))
def test_exp_neon4_reciprocal_and_silu(x: np.ndarray) -> None:
    assert same(ops.exp_neon4(x), ref_exp.exp_neon4(x))
    d = np.abs(x) + F32(1.0)
    assert same(ops.reciprocal(d), ref_exp.reciprocal(d))
    g = np.resize(x, 4 * ((x.size + 3) // 4)).astype(F32)
    u = g[::-1].copy()
    assert same(ops.silu_mul(g, u), ref_exp.silu_mul(g, u))


def test_out_of_range_reciprocal_and_odd_silu_refused_like_the_reference() -> None:
    """Both engines refuse the same inputs: a reciprocal of 2**127 and 6 SiLU elements."""
    big = np.array([2.0**127], dtype=F32)
    for f in (ops.reciprocal, ref_exp.reciprocal):
        with pytest.raises(ValueError):
            f(big)
    for f in (ops.silu_mul, ref_exp.silu_mul):
        with pytest.raises(ValueError):
            f(np.ones(6, F32), np.ones(6, F32))


@EXAMPLES
@given(
    hnp.arrays(F32, 64, elements=st.floats(-10, 10, width=32)),
    st.integers(0, 40000),
    st.sampled_from([10000.0, 1000000.0]),
)
def test_rope(x: np.ndarray, pos: int, theta: float) -> None:
    assert same(ops.rope_heads(x, pos, theta, 32), ref_rope.rope_heads(x, pos, theta, 32))


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 9),
    st.sampled_from([(2, 1, 32), (4, 2, 64)]),
    st.integers(0, 2**32 - 1),
    st.sampled_from([1, 3]),
    st.sampled_from([1.0, 30.0, 1e-7]),
)
def test_attention_both_phases(upto: int, geo, seed: int, threads: int, spread: float) -> None:
    """Decode (INT8 cache, online softmax) and prefill (f32, exp_neon4 groups + expf tail)."""
    heads, kvh, hd = geo
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal(heads * hd) * spread).astype(F32)
    ref_kv, fast_kv = ref_att.BoardKV(), FastKV(kvh, hd)
    for _ in range(upto):
        k = (rng.standard_normal((kvh, hd)) * spread).astype(F32)
        v = rng.standard_normal((kvh, hd)).astype(F32)
        ref_kv.append(k, v)
        fast_kv.append(k, v)
    k8, v8, ks, vs = fast_kv.int8(upto)
    assert same(k8, np.stack(ref_kv.k8)) and same(vs, np.stack(ref_kv.vs))
    scale = ref_att.attention_scale(hd)
    want_d, want_p = [], []
    for h in range(heads):
        g = h * kvh // heads
        qh = q[h * hd : (h + 1) * hd]
        want_d.append(ref_att.decode_head(qh, ref_kv, g, scale))
        keys = [ref_kv.keys[t][g] for t in range(upto)]
        vals = [ref_kv.values[t][g] for t in range(upto)]
        want_p.append(ref_att.prefill_head(qh, keys, vals, scale))
    got_d = ops.attn_decode(q, k8, v8, ks, vs, heads, scale, threads)
    got_p = ops.attn_prefill(q, fast_kv.keys, fast_kv.values, heads, scale, threads)
    assert same(got_d, np.concatenate(want_d)) and same(got_p, np.concatenate(want_p))
