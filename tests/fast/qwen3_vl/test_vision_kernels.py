"""fast/csrc/vision.c's LayerNorm and GELUs equal ref/qwen3_vl/numerics.py bit for bit on every
kernel path and thread count (spec/numerics.md §vision-layernorm, §vision-gelu), and the GELUs are
the correctly rounded real functions: near-midpoint inputs (found by a sweep) take the exact
evaluation and agree with an independent 300-bit mpmath evaluation."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast._native import each_isa
from weightfile.fast.qwen3_vl import numerics as fast
from weightfile.ref.numerics.f32 import F32
from weightfile.ref.qwen3_vl import numerics as ref

pytestmark = [
    pytest.mark.skipif(fast.kernels is None, reason="no C kernels"),
    # extreme rows overflow the reference's float32 sums to inf/NaN, as the contract defines
    pytest.mark.filterwarnings(
        "ignore:overflow encountered:RuntimeWarning",
        "ignore:invalid value encountered:RuntimeWarning",
        "ignore:divide by zero encountered:RuntimeWarning",
    ),
]

#: float32 inputs including ±0, subnormals, the extremes, ±inf and NaN.
f32s = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
#: the range where the GELUs are neither 0 nor x: where rounding is decided by the estimate.
active = st.floats(-12.0, 12.0, width=32)


def mp_round(f, x: float) -> np.float32:
    """An independent binary32 rounding of the real function at 300 bits (no guard logic)."""
    with mpmath.workprec(300):
        return F32(float(mpmath.mpf(f(mpmath.mpf(float(x))))))


def mp_tanh(x):
    return (
        x / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)))
    )


def mp_tanh_quotient(x):
    """mp_tanh as x / (1 + e^(−2u)): 1 + tanh(u) cancels for very negative u (at x = −13 it
    loses 256 of 300 bits), the quotient does not."""
    u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
    return x / (1 + mpmath.exp(-2 * u))


def mp_erf(x):
    return x / 2 * mpmath.erfc(-x / mpmath.sqrt(2))


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))  # NaNs too: same machine
    assert bad.size == 0, (
        f"{bad.size} differ, first at {bad[0]}: {got.flat[bad[0]]} vs {want.flat[bad[0]]}"
    )


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(st.one_of(f32s, active), min_size=1, max_size=40), threads=st.integers(1, 3))
def test_gelus_equal_ref(xs, threads) -> None:
    x = np.array(xs, dtype=np.float32)
    for kind, r in ((fast.TANH, ref.gelu_tanh), (fast.ERF, ref.gelu_erf)):
        want = np.array([r(v) for v in x], dtype=np.float32)
        for _ in each_isa():
            same_bits(fast.gelu(x, kind, threads), want)
            nan = np.isnan(x)  # NaN in gives the same NaN out
            assert np.array_equal(fast.gelu(x, kind)[nan].view(np.uint32), x[nan].view(np.uint32))


def test_near_midpoints_take_the_exact_path() -> None:
    """Of 2^20 inputs in the active range, the ones the guard band flags go through the C
    double-double path (flag 1), none is left to the multi-precision fallback (flag 2), and they
    are the correctly rounded values (300-bit mpmath); the unflagged ones too (a sample). A huge
    guard sends every element through the double-double path and changes no bit."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(1 << 20) * 4).astype(np.float32)
    lib = fast.kernels()
    for kind, f in ((fast.TANH, mp_tanh), (fast.ERF, mp_erf)):
        for _ in each_isa():
            out, flags = np.empty_like(x), np.empty(x.shape, np.uint8)
            n = lib.wf_gelu(
                x.ctypes.data, x.size, kind, fast.GUARD, out.ctypes.data, flags.ctypes.data, 2
            )
            flagged = np.flatnonzero(flags == 1)
            # a band of 2·2^-36 in a midpoint spacing of 2^-23.5 (relative): about 2^20 / 2900
            assert n == 0 and np.all(flags <= 1) and 100 < flagged.size < 1000, flagged.size
            for i in flagged:
                assert out[i] == mp_round(f, x[i]), x[i]
            for i in rng.choice(x.size, 200, replace=False):
                assert out[i] == mp_round(f, x[i]), x[i]
            sample = x[rng.choice(x.size, 256, replace=False)]
            same_bits(fast.gelu(sample, kind, guard=1.0), fast.gelu(sample, kind))


#: The double-double path's hard places: where erfc switches between the series and the continued
#: fraction (z = ±2.5, x = ∓2.5·√2), where the tanh form's e^(−2u) leaves [e^-700, e^700]
#: (x ≈ −20.7 and 20.7 ... far side) and the erfc cut-off (z = 26, x ≈ −36.77), the results near
#: the binary32 underflow (tanh x ≈ −10.5, erf x ≈ −13.9), tiny arguments around 2^-60 and the
#: extremes.
edges = st.sampled_from(
    [3.5355339, -3.5355339, 3.5355341, -3.5355341, -20.7, -20.75, 20.7, -36.76, -36.78, -10.47,
     -10.5, -13.9, -14.0, 8.6736174e-19, 8.673618e-19, -8.6736174e-19, 1e-45, -1e-45, 3e38,
     -3e38, 1e-38, 5.0, -5.0]
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    xs=st.lists(
        st.one_of(f32s, active, edges, st.floats(-40, 40, width=32)), min_size=1, max_size=24
    ),
    threads=st.integers(1, 3),
)
def test_double_double_path_is_correctly_rounded(xs, threads) -> None:
    """With a guard band of 1 every element takes the C double-double path: it equals the
    reference (whose binary64 estimate or mpmath evaluation settles each element) on every path
    and thread count, and the finite results of non-tiny arguments the independent 300-bit
    rounding."""
    x = np.array(xs, dtype=np.float32)
    for kind, r, f in ((fast.TANH, ref.gelu_tanh, mp_tanh), (fast.ERF, ref.gelu_erf, mp_erf)):
        want = np.array([r(v) for v in x], dtype=np.float32)
        for v, w in zip(x, want, strict=True):
            if np.isfinite(v) and abs(v) >= 2.0**-60:
                assert w == mp_round(f, v) or (w == 0 and mp_round(f, v) == 0), v
        for _ in each_isa():
            same_bits(fast.gelu(x, kind, threads, guard=1.0), want)
            out, flags = np.empty_like(x), np.empty(x.shape, np.uint8)
            n = fast.kernels().wf_gelu(
                x.ctypes.data, x.size, kind, 1.0, out.ctypes.data, flags.ctypes.data, threads
            )
            assert n == 0  # nothing left to the multi-precision fallback
            same_bits(out, want)


@settings(max_examples=200, deadline=None)
@given(x=st.one_of(edges, st.floats(-40, 40, width=32).filter(lambda v: abs(v) >= 2.0**-60)))
def test_double_double_error_bound(x) -> None:
    """fast/csrc/gelu.c's double-double value is within 2^-85 (relative) of the 300-bit value,
    far inside the 2^-72 band its rounding test assumes (results below 2^-300 count as zero)."""
    x = float(np.float32(x))
    hi_lo = np.empty(2, np.float64)
    for kind, f in ((fast.TANH, mp_tanh_quotient), (fast.ERF, mp_erf)):
        fast.kernels().wf_gelu_dd(float(x), kind, hi_lo.ctypes.data)
        with mpmath.workprec(300):
            want = f(mpmath.mpf(float(x)))
            got = mpmath.mpf(float(hi_lo[0])) + mpmath.mpf(float(hi_lo[1]))
            if abs(want) < mpmath.mpf(2) ** -300:
                assert abs(got) < 2.0**-300, (x, kind)
                continue
            assert abs(got / want - 1) < mpmath.mpf(2) ** -85, (x, kind, got, want)


rows_n = st.integers(1, 70)


@settings(max_examples=15, deadline=None)
@given(
    n=rows_n,
    rows=st.integers(1, 5),
    scale=st.sampled_from([1e-30, 1e-3, 1.0, 1e4, 1e18]),
    threads=st.integers(1, 3),
    eps=st.sampled_from([1e-6, 1e-5, 0.0]),
    data=st.data(),
)
def test_layernorm_equals_ref(n, rows, scale, threads, eps, data) -> None:
    vals = st.one_of(st.floats(-4, 4, width=32), st.sampled_from([0.0, -0.0, 1e-45, -3e-39]))
    x = np.array(data.draw(st.lists(vals, min_size=n * rows, max_size=n * rows)), np.float32)
    x = (x * np.float32(scale)).reshape(rows, n)
    if data.draw(st.booleans()):  # a constant row: d = 0, var = 0, r = 1/sqrt(eps)
        x[0] = x[0, 0]
    w = np.array(
        data.draw(st.lists(st.floats(-2, 2, width=32), min_size=n, max_size=n)), np.float32
    )
    b = np.array(
        data.draw(st.lists(st.floats(-1, 1, width=32), min_size=n, max_size=n)), np.float32
    )
    want = np.array([ref.layernorm(list(r), w, b, eps) for r in x], dtype=np.float32)
    for _ in each_isa():
        same_bits(fast.layernorm(x, w, b, eps, threads), want)


def test_layernorm_by_hand() -> None:
    """x = [1, 2, 3, 6]: mean 3, d = [-2, -1, 0, 3], var 14/4 = 3.5; with eps 0 the outputs are
    d / sqrt(3.5) in binary32 steps, then ⊗ w ⊕ b."""
    x = np.array([[1, 2, 3, 6]], np.float32)
    w = np.array([1, 2, 1, 1], np.float32)
    b = np.array([0, 0, 1, 0], np.float32)
    r = F32(1) / np.sqrt(F32(3.5))
    want = [F32(-2) * r, (F32(-1) * r) * F32(2), F32(1), F32(3) * r]
    same_bits(fast.layernorm(x, w, b, 0.0)[0], np.array(want, np.float32))


def bits(u: int) -> np.float32:
    return np.array([u], np.uint32).view(np.float32)[0]


@pytest.mark.parametrize("kind", [fast.TANH, fast.ERF])
def test_subnormal_midpoints_by_hand(kind) -> None:
    """For tiny x both GELUs are x/2 + 0.399x² (spec/numerics.md §vision-gelu): an odd subnormal's
    x/2 is a binary32 midpoint and the real value lies just above it. By hand: 2^-149 -> 2^-149;
    3·2^-149 -> 2·2^-149; -2^-149 -> -0; -3·2^-149 -> -2^-149; the smallest normal plus one ulp
    (0x00800001) -> 0x00400001, its negative -> 0x80400000; an even one is x/2 exactly."""
    cases = {
        0x00000001: 0x00000001, 0x00000003: 0x00000002, 0x80000001: 0x80000000,
        0x80000003: 0x80000001, 0x00800001: 0x00400001, 0x80800001: 0x80400000,
        0x00000002: 0x00000001, 0x80000000: 0x80000000, 0x00000000: 0x00000000,
    }  # fmt: skip
    x = np.array([bits(k) for k in cases], np.float32)
    want = np.array(list(cases.values()), np.uint32)
    exact = ref.gelu_tanh if kind == fast.TANH else ref.gelu_erf
    assert np.array_equal(np.array([exact(v) for v in x], np.float32).view(np.uint32), want)
    for _ in each_isa():
        assert np.array_equal(fast.gelu(x, kind).view(np.uint32), want)


def numpy_rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, hd: int) -> np.ndarray:
    """spec/numerics.md §rotation in NumPy float32 operations (products rounded, then the sum)."""
    n, width = x.shape
    v = x.reshape(n, width // hd, hd)
    h = hd // 2
    lo, hi = v[..., :h], v[..., h:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([lo * c - hi * s, hi * c + lo * s], axis=2).reshape(n, width)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 40),
    heads=st.integers(1, 4),
    hd=st.sampled_from([2, 8, 64, 72]),
    specials=st.booleans(),
    threads=st.integers(1, 3),
)
def test_rotate_equals_numpy(seed, rows, heads, hd, specials, threads) -> None:
    """fast/csrc/vision.c's rotary (wf_rotate_rows) on a column range of a wider array, read in
    place, equals the NumPy float32 formula bit for bit, with ±0, subnormals, huge values and NaN
    among the inputs."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((rows, 3 * heads * hd)).astype(np.float32)
    cos = rng.uniform(-1, 1, (rows, hd // 2)).astype(np.float32)
    sin = rng.uniform(-1, 1, (rows, hd // 2)).astype(np.float32)
    if specials:
        pick = np.array([0.0, -0.0, 1e-45, -3e-39, 3e38, -3e38, np.nan], np.float32)
        idx = rng.integers(0, wide.size, max(1, wide.size // 20))
        wide.flat[idx] = rng.choice(pick, idx.size)
    x = wide[:, heads * hd : 2 * heads * hd]
    want = numpy_rotate(np.ascontiguousarray(x), cos, sin, hd)
    for _ in each_isa():
        same_bits(fast.rotate(x, cos, sin, hd, threads), want)
