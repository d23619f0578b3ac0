"""The ordered float line of weightfile/dumps/compare.py (spec/numerics.md §dump-diff): golden
distances derived by hand from the bit patterns, and a property that counts the same distance
with numpy's nextafter, one float at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from weightfile.dumps.compare import Tolerance, compare_arrays, ordered_distance


def dist(a: int, b: int, dtype) -> int:
    """Distance between two bit patterns of a float dtype."""
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    return int(ordered_distance(np.array([a], u), np.array([b], u), np.dtype(dtype).itemsize)[0])


@pytest.mark.parametrize(
    ("a", "b", "dtype", "want"),
    [
        (0x3F800000, 0x3F800001, np.float32, 1),  # 1.0 and nextafter(1.0, 2): one step
        (0x80000001, 0x00000001, np.float32, 2),  # -min subnormal .. +min subnormal: -1 .. 1
        (0x80000000, 0x00000000, np.float32, 0),  # -0 and +0 are one point of the line
        (0x80000000, 0x00000001, np.float32, 1),  # -0 .. +min subnormal
        (0xBF800000, 0x3F800000, np.float32, 2 * 0x3F800000),  # -1.0 .. 1.0: 2,130,706,432
        (0x7F7FFFFF, 0x7F800000, np.float32, 1),  # FLT_MAX .. +inf
        (0x8001, 0x0001, np.float16, 2),  # binary16 subnormals
        (0x3C00, 0x3C01, np.float16, 1),  # 1.0 in binary16 and the next
        (0x8000000000000001, 0x0000000000000001, np.float64, 2),
        (0xFFEFFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, np.float64, 2 * 0x7FEFFFFFFFFFFFFF),  # no wrap
    ],
)
def test_golden_distances(a: int, b: int, dtype, want: int) -> None:
    assert dist(a, b, dtype) == want == dist(b, a, dtype)


@given(
    st.floats(width=32, allow_nan=False, allow_infinity=False),
    st.integers(0, 40),
    st.sampled_from([np.inf, -np.inf]),
)
@example(-3e-45, 5, np.inf)  # -2 min subnormals, up across -0 to +3 min subnormals: 5 steps
@example(1e-45, 3, -np.inf)  # +min subnormal down across +0 to -2 min subnormals
def test_distance_counts_the_floats_between(x: float, k: int, toward: float) -> None:
    """k nextafter steps from x are k apart (stepping up from -min subnormal passes -0, then
    +min subnormal: two steps, as -1 .. 1 on the line)."""
    start = y = np.float32(x)
    for _ in range(k):
        y = np.nextafter(y, np.float32(toward))
    if not np.isfinite(y):
        return  # stepped onto infinity: not a pair of finite floats
    got = dist(int(start.view(np.uint32)), int(np.float32(y).view(np.uint32)), np.float32)
    assert got == k, (start, y)


def test_a_sign_change_is_counted_apart_from_the_same_sign_distance() -> None:
    """[1.0 vs next (1 ulp), 2.0 vs 2.0+3 ulps, -1.0 vs 1.0 (sign change)]: max 3 ulps among
    same-sign elements, 1 sign change 2,130,706,432 apart."""
    a = np.array([0x3F800000, 0x40000000, 0xBF800000], np.uint32).view(np.float32)
    b = np.array([0x3F800001, 0x40000003, 0x3F800000], np.uint32).view(np.float32)
    d = compare_arrays("x", a, b, Tolerance())
    assert (d.differ, d.max_ulps, d.sign_changes, d.sign_change_ulps) == (3, 3, 1, 2 * 0x3F800000)
    assert d.max_abs == 2.0 and d.status == "different"


def test_zero_signs_differ_bit_for_bit_but_are_zero_ulps_apart() -> None:
    d = compare_arrays("z", np.array([0.0], np.float32), np.array([-0.0], np.float32), Tolerance())
    assert d.status == "different" and d.sign_changes == 1 and d.sign_change_ulps == 0
    assert compare_arrays("z", np.float32([0.0]), np.float32([-0.0]), Tolerance(max_ulps=0)).ok


@pytest.mark.parametrize(
    ("tol", "ok"),
    [
        (Tolerance(max_ulps=3), True),
        (Tolerance(max_ulps=2), False),
        (Tolerance(atol=7.1e-7), False),
        (Tolerance(atol=7.2e-7), True),
        (Tolerance(rtol=3.6e-7), True),  # 3·2^-22 / 2 = 3.58e-7
        (Tolerance(rtol=3.5e-7), False),
    ],
)
def test_tolerances_on_one_element_three_ulps_apart(tol: Tolerance, ok: bool) -> None:
    """2.0 (0x40000000) vs 0x40000003: |delta| = 3·2^-22 = 7.152557e-7, 3 ulps."""
    a = np.array([0x40000000], np.uint32).view(np.float32)
    b = np.array([0x40000003], np.uint32).view(np.float32)
    assert compare_arrays("t", a, b, tol).ok is ok


def test_nan_against_a_number_and_infinities_never_match_by_tolerance() -> None:
    a = np.float32([np.nan, np.inf, 1.0])
    b = np.float32([1.0, np.float32(3.4028235e38), 1.0])
    d = compare_arrays("n", a, b, Tolerance(atol=1e39, max_ulps=10))
    assert d.beyond == 2 and d.nan_mismatch == 1 and not d.ok
    same_nans = compare_arrays("n", np.float32([np.nan]), -np.float32([np.nan]), Tolerance())
    assert same_nans.status == "identical"
