"""The reference Hadamard rotation (spec/numerics.md §hadamard) against an independent construction:
the Sylvester matrix built by Kronecker products in binary64 (and scipy's, when installed), within
the rounding of ten binary32 stages; plus hand-derived exact cases and the float order itself."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from weightfile.ref.numerics.hadamard import butterfly_stage, hadamard

K = 1024
U = 2.0**-24  # binary32 unit roundoff


@cache
def sylvester() -> np.ndarray:
    """H_1024 = H_2 ⊗ … ⊗ H_2 (ten factors), unnormalised, binary64."""
    h2 = np.array([[1.0, 1.0], [1.0, -1.0]])
    h = np.ones((1, 1))
    for _ in range(10):
        h = np.kron(h, h2)
    return h


def test_kron_construction_is_scipys() -> None:
    linalg = pytest.importorskip("scipy.linalg")
    assert (linalg.hadamard(K) == sylvester()).all()


@pytest.mark.parametrize("blocks", [1, 2])
@pytest.mark.parametrize("scale", [1.0, 1e-30, 1e30])
def test_transform_is_the_normalised_sylvester_matrix(blocks: int, scale: float) -> None:
    rng = np.random.default_rng(blocks)
    x = (rng.standard_normal(K * blocks) * scale).astype(np.float32)
    signs = rng.choice([-1, 1], size=K * blocks)
    got = np.array(hadamard(list(x), list(signs)), dtype=np.float64)
    for b in range(blocks):
        sl = slice(b * K, (b + 1) * K)
        xs = x[sl].astype(np.float64) * signs[sl]
        want = sylvester() @ xs / 32.0
        # ten roundings per output, each relative to a partial sum bounded by Σ|x| of the block
        bound = 11 * U * np.abs(xs).sum() / 32.0
        err = np.abs(got[sl] - want)
        assert err.max() <= bound, (err.max(), bound)
        assert np.abs(want).max() > 100 * bound  # the comparison is not vacuous


def test_exact_hand_cases() -> None:
    """H(e_0) = 1/32 everywhere; H(1, …, 1) = 32·e_0; H is its own inverse on these."""
    e0 = [np.float32(0)] * K
    e0[0] = np.float32(1)
    ones = [np.float32(1)] * K
    plus = [1] * K
    assert hadamard(e0, plus) == [np.float32(1 / 32)] * K
    assert hadamard(ones, plus) == [np.float32(32)] + [np.float32(0)] * (K - 1)
    # signs flip the input first: all −1 signs on all ones give −32·e_0
    assert hadamard(ones, [-1] * K)[0] == np.float32(-32)
    # e_5 (binary 101) -> (−1)^popcount(i & 5) / 32
    e5 = [np.float32(0)] * K
    e5[5] = np.float32(1)
    got = hadamard(e5, plus)
    assert got == [np.float32((-1) ** bin(i & 5).count("1") / 32) for i in range(K)]


def test_stride_one_pairs_first() -> None:
    """The stages' order matters under rounding (spec/numerics.md §hadamard): with
    x = (1, 2^-24, 0, 2^-24, 0, …) stride 1 first gives y_0 = (1 ⊕ 2^-24) ⊕ (0 ⊕ 2^-24) = 1 (two
    ties to even), while stride 2 first would give (1 ⊕ 0) ⊕ (2^-24 ⊕ 2^-24) = 1 + 2^-23."""
    tiny, zero = np.float32(2.0**-24), np.float32(0)
    x = [np.float32(1), tiny, zero, tiny] + [zero] * (K - 4)
    assert hadamard(x, [1] * K)[0] == np.float32(1 / 32)
    y = butterfly_stage(butterfly_stage(x[:4], 2), 1)  # the other order, on the first 4
    assert y[0] == np.float32(1 + 2.0**-23)


def test_subnormal_outputs_round_and_huge_ones_overflow() -> None:
    """The scale is exact for normal results only: x_0 = 2^-122·(1 + 2^-23) alone passes the ten
    stages unchanged, and 2^-5·x_0 = 2^-127 + 2^-150 is a subnormal tie, rounded to even 2^-127.
    Inputs of 2^127 overflow the first stage to +inf."""
    x = [np.float32(2.0**-122 * (1 + 2.0**-23))] + [np.float32(0)] * (K - 1)
    assert hadamard(x, [1] * K)[0] == np.float32(2.0**-127)
    big = [np.float32(2.0**127)] * 2 + [np.float32(0)] * (K - 2)
    assert np.isposinf(hadamard(big, [1] * K)[0])


@pytest.mark.parametrize("n,signs", [(1000, 1000), (1024, 1023), (2048, 1024)])
def test_lengths_are_checked(n: int, signs: int) -> None:
    with pytest.raises(ValueError):
        hadamard([np.float32(0)] * n, [1] * signs)
