"""The resampled position embedding (spec/numerics.md §vision-pos-embed) against two oracles that
do not call `bilinear_axis`: an exact model in rational arithmetic with a hand-written binary32
rounding, run everywhere, and transformers' own interpolation helper (torch), where installed.

The hard cases are the fractions below 0.5 that carry bits below 2^-24: there `1 ⊖ a` rounds, so
the spec's `w1 = 1 ⊖ |a ⊖ 1|` is not `a`. They arise only in the first tap interval (src < 1; for
src ≥ 1 the fraction is a multiple of ulp(src) ≥ 2^-23 and `1 ⊖ a` is exact), i.e. on grids with
`size − 1 > 2·(side − 1)`, more than twice the table's side. Worked by hand for side 4 and 10 rows
(row 1): src = 3 ⊘ 9 = 11184811·2^-25 (the binary32 nearest 1/3, 0x3EAAAAAB); 1 − src =
22369621·2^-25 lies halfway between two binary32 (ulp 2^-24 there), ties to even 11184810·2^-24;
so w1 = 1 ⊖ 11184810·2^-24 = 11184812·2^-25 = src + 2^-25, one ulp above the fraction itself.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.qwen3_vl.numerics import bilinear_axis, bilinear_row

F32 = np.float32


def rnd32(q: Fraction) -> Fraction:
    """q rounded to the nearest binary32, ties to even (exponent range of normals and
    subnormals; no overflow occurs here)."""
    if q == 0:
        return Fraction(0)
    sign, m = (1, q) if q > 0 else (-1, -q)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:  # now 2^e ≤ m < 2^(e+1)
        e -= 1
    ulp = Fraction(2) ** max(e - 23, -149)
    scaled = m / ulp
    whole = math.floor(scaled)
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    return sign * whole * ulp


def exact(v: float | np.float32) -> Fraction:
    return Fraction(float(v))


def model_axis(i: int, size: int, side: int) -> tuple[tuple[int, int], tuple[Fraction, Fraction]]:
    """spec/numerics.md §vision-pos-embed per axis, each ⊗ ⊘ ⊖ an exact operation rounded once."""
    src = rnd32(rnd32(Fraction(i) * (side - 1)) / max(size - 1, 1))
    f = math.floor(src)
    a = src - f  # exact: f is an integer below src's ulp range
    assert rnd32(a) == a
    w0 = max(rnd32(1 - a), Fraction(0))
    w1 = max(rnd32(1 - abs(rnd32(a - 1))), Fraction(0))
    return (f, min(f + 1, side - 1)), (w0, w1)


def model_row(table: np.ndarray, r: int, c: int, gh: int, gw: int, side: int) -> list[Fraction]:
    """((t00 ⊕ t01) ⊕ t10) ⊕ t11 with t_ij = table[ri·S + cj] ⊗ (w_i ⊗ w_j), exactly rounded."""
    (r0, r1), (wr0, wr1) = model_axis(r, gh, side)
    (c0, c1), (wc0, wc1) = model_axis(c, gw, side)
    taps = [(r0, c0, wr0, wc0), (r0, c1, wr0, wc1), (r1, c0, wr1, wc0), (r1, c1, wr1, wc1)]
    out: list[Fraction] = []
    for k, (ri, ci, wi, wj) in enumerate(taps):
        w = rnd32(wi * wj)
        terms = [rnd32(exact(v) * w) for v in table[ri * side + ci]]
        out = terms if k == 0 else [rnd32(o + t) for o, t in zip(out, terms, strict=True)]
    return out


def test_the_hand_worked_fraction_below_one_half() -> None:
    """The module docstring's side 4, 10 rows, row 1, and the exact model agreeing with it."""
    third = Fraction(11184811, 2**25)
    assert rnd32(Fraction(1, 3)) == third and F32(3) / F32(9) == F32(float(third))
    want = ((0, 1), (Fraction(11184810, 2**24), third + Fraction(1, 2**25)))
    assert model_axis(1, 10, 4) == want
    (t0, t1), (w0, w1) = bilinear_axis(1, 10, 4)
    assert (t0, t1) == want[0] and (exact(w0), exact(w1)) == want[1]
    assert exact(w1) != third  # the weight is not the fraction itself


#: (side, size) pairs on both sides of "twice the side", the real table (48) included.
GRIDS = [(s, n) for s in (2, 3, 4, 5, 7, 8, 16) for n in range(1, 3 * s + 4)]
GRIDS += [(48, n) for n in (1, 2, 47, 48, 49, 95, 96, 97, 98, 150, 191)]


def test_every_axis_weight_equals_the_exact_model() -> None:
    """All rows of grids up to more than twice the side; the cases must reach fractions on both
    sides of 0.5 and weights w1 ≠ a (else this test could not tell the two apart)."""
    below = above = differs = 0
    for side, size in GRIDS:
        for i in range(size):
            (t0, t1), (w0, w1) = bilinear_axis(i, size, side)
            (m0, m1), (v0, v1) = model_axis(i, size, side)
            assert (t0, t1, exact(w0), exact(w1)) == (m0, m1, v0, v1), (side, size, i)
            below += 0 < v1 < Fraction(1, 2)
            above += v1 >= Fraction(1, 2) and v1 != 1
            src = rnd32(rnd32(Fraction(i) * (side - 1)) / max(size - 1, 1))
            differs += v1 != src - math.floor(src)
    assert below > 50 and above > 50 and differs >= 10


@given(
    side=st.integers(2, 64),
    data=st.data(),
)
def test_drawn_axes_equal_the_exact_model(side: int, data: st.DataObject) -> None:
    """Any table side and any grid up to four times it, any row."""
    size = data.draw(st.integers(1, 4 * side + 4), label="size")
    i = data.draw(st.integers(0, size - 1), label="i")
    (t0, t1), (w0, w1) = bilinear_axis(i, size, side)
    assert ((t0, t1), (exact(w0), exact(w1))) == model_axis(i, size, side)


@pytest.mark.parametrize(("side", "gh", "gw"), [(4, 10, 4), (3, 8, 14), (5, 6, 13), (2, 5, 2)])
def test_position_rows_equal_the_exact_model(side: int, gh: int, gw: int) -> None:
    """Whole resampled grids, each element rounded exactly as the spec's sum order says."""
    table = np.random.default_rng(side * 100 + gh).normal(size=(side * side, 3)).astype(F32)
    for r in range(gh):
        for c in range(gw):
            got = [exact(v) for v in bilinear_row(table, r, c, gh, gw, side)]
            assert got == model_row(table, r, c, gh, gw, side), (r, c)


# -- transformers' helper (torch), where installed --------------------------------------------


def _helper():
    pytest.importorskip("torch")
    vision_utils = pytest.importorskip("transformers.vision_utils")
    helper = getattr(vision_utils, "get_vision_interpolation_indices_and_weights", None)
    if helper is None:
        pytest.skip("this transformers has no get_vision_interpolation_indices_and_weights")
    return helper


@pytest.mark.parametrize(("side", "gh", "gw"), [(4, 10, 12), (3, 14, 6), (48, 98, 150), (5, 4, 4)])
def test_taps_weights_and_rows_equal_transformers(side: int, gh: int, gw: int) -> None:
    """transformers' Qwen3-VL resampling (bilinear, corners aligned: the hat kernel
    max(1 − |src − floor − k|, 0) in float32, the row weight times the column weight) gives the
    same taps and the same binary32 weights; the table values times those weights, summed in the
    spec's order, give our rows bit for bit."""
    import torch

    helper = _helper()
    grid = torch.tensor([[1, gh, gw]])
    idx, wts = helper(grid, side, mode="bilinear", align_corners=True, spatial_merge_size=1)
    assert idx.shape == (gh * gw, 4) and wts.dtype == torch.float32
    table = np.random.default_rng(side + gh).normal(size=(side * side, 2)).astype(F32)
    products = torch.from_numpy(table)[idx] * wts[:, :, None]  # torch's float32 products
    want = ((products[:, 0] + products[:, 1]) + products[:, 2]) + products[:, 3]
    for n in range(gh * gw):
        r, c = divmod(n, gw)  # raster order with spatial_merge_size 1
        (r0, r1), (wr0, wr1) = bilinear_axis(r, gh, side)
        (c0, c1), (wc0, wc1) = bilinear_axis(c, gw, side)
        ours = [r0 * side + c0, r0 * side + c1, r1 * side + c0, r1 * side + c1]
        assert idx[n].tolist() == ours, (r, c)
        ours_w = np.array([wr0 * wc0, wr0 * wc1, wr1 * wc0, wr1 * wc1], dtype=F32)
        assert (wts[n].numpy().view(np.uint32) == ours_w.view(np.uint32)).all(), (r, c)
        row = np.array(bilinear_row(table, r, c, gh, gw, side), dtype=F32)
        assert (row.view(np.uint32) == want[n].numpy().view(np.uint32)).all(), (r, c)


def test_rows_close_to_torch_interpolate_on_grids_beyond_twice_the_side() -> None:
    """F.interpolate(bilinear, align_corners=True) weighs by the fraction itself (w1 = a) and sums
    in its own order, so it agrees only to rounding: a check on the taps and the geometry."""
    torch = pytest.importorskip("torch")
    side, gh, gw = 4, 13, 10
    table = np.random.default_rng(7).normal(size=(side * side, 3)).astype(F32)
    img = torch.from_numpy(table.T.reshape(1, 3, side, side).copy())
    want = torch.nn.functional.interpolate(img, size=(gh, gw), mode="bilinear", align_corners=True)
    for r in range(gh):
        for c in range(gw):
            got = np.array(bilinear_row(table, r, c, gh, gw, side))
            assert np.abs(got - want[0, :, r, c].numpy()).max() < 1e-5, (r, c)
