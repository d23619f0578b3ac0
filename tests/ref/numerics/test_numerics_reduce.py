"""The canonical summation order (spec/numerics.md §lanes8-tree): hand-derived cases where order
matters."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.numerics.reduce import combine_lanes, dot, lane_partials, max_f32, sum_f32

F = np.float32
BIG = F(2.0**24)  # 2**24 + 1 is a tie between 2**24 and 2**24 + 2; RNE picks 2**24


def terms(n: int, **at: float) -> list[np.float32]:
    v = [F(0)] * n
    for k, x in at.items():
        v[int(k[1:])] = F(x)
    return v


def test_lanes_take_index_mod_8() -> None:
    lanes = lane_partials([F(i) for i in range(20)])
    # lane j = j + (j+8) + (j+16 if < 20): lane 0 = 0+8+16, lane 3 = 3+11+19, lane 7 = 7+15
    assert [float(x) for x in lanes] == [24, 27, 30, 33, 16, 18, 20, 22]


def test_tree_adds_upper_half_first() -> None:
    # ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)): 2**24 meets the two 1s only after 1+1 = 2
    assert sum_f32(terms(16, i0=2.0**24, i2=1.0, i6=1.0)) == F(2.0**24 + 2)
    # a plain left-to-right sum would round 2**24 + 1 down twice
    seq = F(0)
    for x in terms(16, i0=2.0**24, i2=1.0, i6=1.0):
        seq = seq + x
    assert seq == BIG


def test_same_lane_adds_in_ascending_order() -> None:
    # elements 0, 8, 16 share lane 0: (2**24 + 1) + 1 rounds down twice
    assert sum_f32(terms(24, i0=2.0**24, i8=1.0, i16=1.0)) == BIG
    assert combine_lanes([F(1)] * 8) == F(8)


def test_dot_rounds_each_product() -> None:
    # (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24: the product rounds to 1 + 2**-11 before the sum
    a = F(1 + 2.0**-12)
    assert dot([a], [a]) == F(1 + 2.0**-11)


def test_max_propagates_nan_and_keeps_first() -> None:
    assert np.isnan(max_f32([F(1), F("nan"), F(3)]))
    assert max_f32([F(-1), F(2), F(2)]) == F(2)


@given(st.lists(st.integers(-(2**20), 2**20), min_size=1, max_size=40))
def test_integer_sums_are_exact_in_any_order(values: list[int]) -> None:
    # every partial sum stays below 2**24 in magnitude, so any order gives the exact total
    assert sum_f32([F(v) for v in values]) == F(sum(values))
