"""The canonical exp, sigmoid and SiLU (spec/numerics.md §exp, §silu)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.numerics.exp import X_MAX, X_MIN, exp, sigmoid, silu
from weightfile.ref.numerics.f32 import f32_from_bits

F = np.float32


def ulp_error(got: np.float32, x: float) -> float:
    """|got - exp(x)| in binary32 ulps at exp(x), with binary64 exp as the truth."""
    e = math.exp(x)
    _, ex = math.frexp(e)
    return abs(float(got) - e) / math.ldexp(1.0, max(ex - 24, -149))


def test_exact_points() -> None:
    assert exp(F(0)) == F(1) and exp(F(-0.0)) == F(1)
    assert exp(F(1)) == f32_from_bits(0x402DF854)  # e rounded to binary32: 2.71828175
    assert exp(F(-1)) == F(math.exp(-1))


def test_range_ends() -> None:
    assert np.isfinite(exp(X_MAX)) and exp(np.nextafter(X_MAX, F(np.inf))) == F(np.inf)
    assert exp(X_MIN) == f32_from_bits(1)  # the smallest subnormal, 2**-149
    assert exp(np.nextafter(X_MIN, F(-np.inf))) == F(0)
    assert exp(F(np.inf)) == F(np.inf) and exp(F(-np.inf)) == F(0)
    assert np.isnan(exp(F(np.nan)))


@given(st.floats(float(X_MIN), float(X_MAX), width=32))
def test_error_below_one_ulp(x: float) -> None:
    assert ulp_error(exp(F(x)), x) < 1.0  # tools/exp_error.py measures the whole range


@given(st.lists(st.floats(-120, 100, width=32), min_size=1, max_size=16))
def test_array_and_scalar_calls_agree_bitwise(xs: list[float]) -> None:
    arr = exp(np.array(xs, dtype=np.float32))
    one_by_one = np.array([exp(F(x)) for x in xs], dtype=np.float32)
    assert (arr.view(np.uint32) == one_by_one.view(np.uint32)).all()


def test_silu_and_sigmoid_points() -> None:
    assert silu(F(0)) == F(0)
    assert sigmoid(F(0)) == F(0.5)
    assert silu(F(-200)) == F(0) and np.signbit(silu(F(-200)))  # -200 / inf = -0
    assert silu(F(100)) == F(100)  # exp(-100) is below half an ulp of 1


@given(st.floats(-80, 80, width=32))
def test_silu_close_to_binary64(x: float) -> None:
    want = x / (1 + math.exp(-x))
    assert abs(float(silu(F(x))) - want) <= 4 * abs(want) * 2.0**-24 + 2.0**-140
