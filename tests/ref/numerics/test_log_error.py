"""The canonical log / log1p / softplus (spec/numerics.md §log) against mpmath at 80 bits.

The contract fixes the operation sequence, not an accuracy; these tests measure the accuracy
the sequence achieves and pin the bound the contract states (log <= 2 ulp, softplus <= 4 ulp,
measured 1.60 and 3.18 on the samples below), plus the special values and the exact constants.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from weightfile.ref.numerics.f32 import F32
from weightfile.ref.numerics.log import LOG_POLY, SQRT_HALF, log, log1p, softplus


def ulp_error(got: np.float32, exact: mpmath.mpf) -> float:
    """|got − exact| in units of the binary32 ulp at `exact`."""
    if exact == 0:
        return 0.0 if got == 0 else float("inf")
    exponent = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), -126)
    return float(abs(mpmath.mpf(float(got)) - exact) / mpmath.mpf(2) ** (exponent - 23))


def max_ulp(fn, xs: np.ndarray, exact) -> float:
    ys = fn(xs)
    with mpmath.workprec(80):
        return max(ulp_error(y, exact(mpmath.mpf(float(x)))) for x, y in zip(xs, ys, strict=True))


def test_log_error_over_all_binades() -> None:
    rng = np.random.default_rng(7)
    xs = rng.integers(1, 0x7F800000, size=6000, dtype=np.uint32).view(np.float32)
    near_one = np.linspace(0.5, 2.0, 3001, dtype=np.float32)
    err = max_ulp(log, np.concatenate([xs, near_one]), mpmath.log)
    assert err <= 2.0, err


def test_softplus_error_over_its_range() -> None:
    xs = np.linspace(-40.0, 30.0, 5001, dtype=np.float32)

    def exact(x: mpmath.mpf) -> mpmath.mpf:
        return x if x > 20 else mpmath.log1p(mpmath.exp(x))

    err = max_ulp(softplus, xs, exact)
    assert err <= 4.0, err


def test_log1p_keeps_tiny_arguments() -> None:
    tiny = np.float32(1e-10)
    assert log1p(tiny) == tiny  # 1 + y rounds to 1: the result is y itself
    assert log(F32(1.0) + tiny) == 0  # which log(1 + y) alone would lose


def test_special_values() -> None:
    assert log(F32(1.0)) == 0
    assert log(F32(0.0)) == -np.inf and log(F32(np.inf)) == np.inf
    assert np.isnan(log(F32(-1.0))) and np.isnan(log(F32(np.nan)))
    assert softplus(F32(25.0)) == F32(25.0)  # above the threshold: x itself, bit for bit
    assert softplus(F32(-200.0)) == 0  # exp underflows to +0, log1p(0) = 0
    sub = np.float32(1e-40)  # a subnormal: the exact 2^24 scaling path
    with mpmath.workprec(80):
        assert ulp_error(log(sub), mpmath.log(mpmath.mpf(float(sub)))) <= 2.0


@pytest.mark.parametrize("k", range(6))
def test_series_constants_are_the_nearest_binary32(k: int) -> None:
    want = Fraction(2, 2 * k + 3)  # 2/3, 2/5, ..., 2/13
    got = LOG_POLY[k]
    up, down = np.nextafter(got, F32(1)), np.nextafter(got, F32(0))
    assert abs(Fraction(float(got)) - want) <= abs(Fraction(float(up)) - want)
    assert abs(Fraction(float(got)) - want) <= abs(Fraction(float(down)) - want)
    assert float(SQRT_HALF) ** 2 < 0.5 < float(np.nextafter(SQRT_HALF, F32(1))) ** 2
