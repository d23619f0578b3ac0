"""RMSNorm, softmax, quantized matvec, RoPE and the profile's kernels (spec/numerics.md
§quantized-matmul, §norms, §exp, §silu, §rope)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.numerics.exp import exp
from weightfile.ref.numerics.f32 import f16_bits_to_f32
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.numerics.norm import rmsnorm
from weightfile.ref.numerics.quant import (
    activation_codes,
    activation_scale,
    matvec_f32_weights,
    matvec_q8_activation,
    reconstruct_row,
)
from weightfile.ref.numerics.rope import RopeTables, apply_rope, inv_freq, mrope_axis
from weightfile.ref.numerics.softmax import softmax
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

F = np.float32


def fv(*xs: float) -> list[np.float32]:
    return [F(x) for x in xs]


# --- spec/numerics.md §rmsnorm RMSNorm
# ------------------------------------------------------------------------


def test_rmsnorm_hand_case() -> None:
    # ss = 16, mean = 4, sqrt = 2, r = 0.5: out = (2 * 0.5) * w = w exactly
    assert rmsnorm(fv(2, 2, -2, 2), fv(1, 3, 0.5, -7), F(0)) == fv(1, 3, -0.5, -7)


def test_rmsnorm_eps_enters_under_the_root() -> None:
    # x = [0, 0]: r = 1 / sqrt(eps) = 1/0.25 when eps = 1/16, and output stays 0
    assert rmsnorm(fv(0, 0), fv(1, 1), F(1 / 16)) == fv(0, 0)
    out = rmsnorm(fv(3, 4), fv(1, 1), F(0.5))  # mean 12.5 + 0.5 = 13
    assert out == [F(F(3) * F(1 / F(np.sqrt(F(13))))), F(F(4) * F(1 / F(np.sqrt(F(13)))))]


# --- spec/numerics.md §softmax softmax
# --------------------------------------------------------------------------


def test_softmax_hand_cases() -> None:
    assert softmax(fv(5, 5, 5, 5), exp) == fv(0.25, 0.25, 0.25, 0.25)
    assert softmax(fv(2, -np.inf), exp) == fv(1, 0)
    # max subtraction: huge scores do not overflow
    assert softmax(fv(1000, 1000), exp) == fv(0.5, 0.5)


@given(st.lists(st.floats(-30, 30, width=32), min_size=1, max_size=20))
def test_softmax_sums_to_one(scores: list[float]) -> None:
    p = softmax([F(s) for s in scores], exp)
    assert abs(sum(float(x) for x in p) - 1) < 1e-5
    assert all(x >= 0 for x in p)


# --- spec/numerics.md §quantized-matmul quantized matvec
# --------------------------------------------------------------------


def test_activation_quantization_hand_case() -> None:
    block = fv(127, -63.5, 0.5, 1.5, 2.5, -2.5, 0, -127) + fv(*([0.0] * 24))
    d = activation_scale(block)
    assert d == F(1)  # 127 / 127
    # ties go to even: -63.5 -> -64, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2
    assert activation_codes(block, d)[:8] == [127, -64, 0, 2, 2, -2, 0, -127]


def test_zero_block_gives_zero_codes() -> None:
    block = fv(*([0.0] * 32))
    assert activation_scale(block) == F(0)
    assert activation_codes(block, F(0)) == [0] * 32


def test_signalling_nan_block_scales_to_nan_without_a_warning() -> None:
    """spec/numerics.md §q8-activation step 1: amax is NaN when an element is; a signalling NaN
    (0x7f800001) flags "invalid" in the division, which is the intended NaN, not a warning."""
    snan = np.array([0x7F800001], dtype="<u4").view("<f4")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = activation_scale([snan, *fv(*([1.0] * 31))])
    assert np.isnan(d) and activation_codes([snan], d) == [0]


def one_block_matrix(codes: list[int], scale: float) -> QuantMatrix:
    c = np.array([codes], dtype=np.int8)
    s = np.array([[F(scale)]], dtype=np.float16).view(np.uint16)
    return QuantMatrix(c, s)


def test_q8_activation_matvec_hand_case() -> None:
    # x = 2 * [1..32]: amax 64, d = 64/127; codes of x = rint(x / d) (computed by hand below)
    x = [F(2 * (i + 1)) for i in range(32)]
    d = F(64) / F(127)
    codes = [int(np.rint(v / d)) for v in x]
    assert codes[-1] == 127 and codes[0] == 4  # 2 / 0.50394 = 3.97 -> 4
    m = one_block_matrix([1] * 32, 0.5)
    want = F(F(sum(codes)) * (F(0.5) * d))  # D * (d_w * d_x), one block
    assert matvec_q8_activation(m, x) == [want]


def test_f32_weights_mode_reconstructs_exactly() -> None:
    m = one_block_matrix(list(range(-16, 16)), 0.25)
    assert reconstruct_row(m, 0) == [F(c * 0.25) for c in range(-16, 16)]
    x = fv(*([1.0] * 32))
    assert matvec_f32_weights(m, x) == [F(sum(c * 0.25 for c in range(-16, 16)))]


def test_nan_activation_poisons_the_row() -> None:
    m = one_block_matrix([1] * 32, 0.5)
    x = fv(np.nan, *([1.0] * 31))
    assert np.isnan(matvec_q8_activation(m, x)[0])


@given(st.lists(st.floats(-4, 4, width=32), min_size=64, max_size=64))
def test_modes_agree_to_activation_quantization_error(xs: list[float]) -> None:
    # |x - d*q| <= d/2 per element, so the two modes differ by at most sum|w| * d/2 per block
    rng = np.random.default_rng(7)
    codes = rng.integers(-8, 8, size=(3, 64), dtype=np.int8)
    scales = np.full((3, 2), 0.125, dtype=np.float16).view(np.uint16)
    m = QuantMatrix(codes, scales)
    x = [F(v) for v in xs]
    a = matvec_q8_activation(m, x)
    b = matvec_f32_weights(m, x)
    for r in range(3):
        bound = 0.0
        for blk in range(2):
            d = max(abs(float(v)) for v in x[32 * blk : 32 * blk + 32]) / 127
            bound += sum(abs(int(c)) * 0.125 for c in codes[r, 32 * blk : 32 * blk + 32]) * d / 2
        assert abs(float(a[r]) - float(b[r])) <= bound * 1.01 + 1e-5


def test_f16_scale_widening_is_exact() -> None:
    assert f16_bits_to_f32(0x3C00) == F(1) and f16_bits_to_f32(0x0001) == F(2.0**-24)


# --- spec/numerics.md §rope RoPE
# ---------------------------------------------------------------------------------


def test_inv_freq_hand_case() -> None:
    # theta 10000, d 4: exponents 0 and 0.5 -> pow 1 and 100 -> 1 and fl(1/100)
    assert inv_freq(F(10000), 4) == [F(1), F(1) / F(100)]


def test_rope_tables_match_correctly_rounded_binary64() -> None:
    t = RopeTables(F(10000), 8)
    assert t.row(0) == (fv(1, 1, 1, 1), fv(0, 0, 0, 0))
    cos, sin = t.row(7)
    for i, f in enumerate(t.inv_freq):
        a = float(F(7) * f)
        assert abs(float(cos[i]) - math.cos(a)) <= abs(math.cos(a)) * 2.0**-24
        assert abs(float(sin[i]) - math.sin(a)) <= abs(math.sin(a)) * 2.0**-24


def test_rotate_half_quarter_turn() -> None:
    # cos 0, sin 1: [x0, x1, x2, x3] -> [-x2, -x3, x0, x1]
    assert apply_rope(fv(1, 2, 3, 4), fv(0, 0), fv(1, 1)) == fv(-3, -4, 1, 2)


def test_mrope_sections_interleave() -> None:
    axes = [mrope_axis(i, (24, 20, 20)) for i in range(64)]  # spec/models.md §qwen3-vl worked
    # example
    assert [i for i, a in enumerate(axes) if a == 1] == list(range(1, 59, 3))
    assert [i for i, a in enumerate(axes) if a == 2] == list(range(2, 60, 3))
    assert axes.count(0) == 24 and all(mrope_axis(i, None) == 0 for i in range(64))


# --- spec/numerics.md §profiles profile -> kernels
# -------------------------------------------------------------------


def test_kernels_dispatch_on_the_quantized_mode() -> None:
    m = one_block_matrix([3] * 32, 0.5)
    x = [F(0.01 * (i + 1)) for i in range(32)]
    engine = kernels_for(CANONICAL)
    f32w = kernels_for(CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS))
    assert engine.matvec(m, x) == matvec_q8_activation(m, x)
    assert f32w.matvec(m, x) == matvec_f32_weights(m, x)
    assert engine.matvec(m, x) != f32w.matvec(m, x)
    dense = DenseMatrix(np.ones((2, 32), dtype=np.float32))
    assert engine.matvec(dense, x) == f32w.matvec(dense, x)


def test_unknown_rules_are_refused() -> None:
    from dataclasses import replace

    with pytest.raises(NotImplementedError):
        kernels_for(replace(CANONICAL, exp="libm"))
    with pytest.raises(NotImplementedError):
        kernels_for(replace(CANONICAL, fma=True))
