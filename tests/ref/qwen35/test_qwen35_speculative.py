"""The round's acceptance rules and the keyed random streams (spec/models.md §qwen35-mtp-round,
spec/numerics.md §mtp-sampling), on hand-made logits with hand-derived answers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from weightfile.ref.numerics.f32 import F32
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen35.speculative import (
    ACCEPT,
    CORRECTION,
    NEXT,
    Speculation,
    keyed_uniform,
    residual_sample,
)
from weightfile.spec.numerics.profile import CANONICAL

KERNELS = kernels_for(CANONICAL)
MASK = (1 << 64) - 1


def splitmix64(state: int) -> tuple[int, int]:
    """Vigna's splitmix64.c, written out here: (new state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def test_splitmix64_first_output_of_seed_0_is_the_published_one() -> None:
    assert splitmix64(0)[1] == 0xE220A8397B1DCDAF


def test_keyed_uniform_is_the_documented_derivation() -> None:
    for seed, purpose, position in [(0, ACCEPT, 5), (7, CORRECTION, 0), (2**40, NEXT, 123456)]:
        k = splitmix64(seed)[1]
        out = splitmix64(k ^ (purpose << 56) ^ position)[1]
        assert keyed_uniform(seed, purpose, position) == np.float32((out >> 40) * 2.0**-24)
    # distinct purposes and positions give distinct streams
    assert len({keyed_uniform(1, p, q) for p in (1, 2, 3) for q in range(4)}) == 12


def test_residual_sample_draws_from_p_minus_q() -> None:
    p = [F32(0.5), F32(0.25), F32(0.25)]
    # q one-hot at 0: r = [0, .25, .25] / .5 = [0, .5, .5]
    assert residual_sample(p, 0, F32(0.3), KERNELS) == 1
    assert residual_sample(p, 0, F32(0.6), KERNELS) == 2
    # q one-hot at 1: r = [.5, 0, .25] / .75 = [2/3, 0, 1/3]
    assert residual_sample(p, 1, F32(0.66), KERNELS) == 0
    assert residual_sample(p, 1, F32(0.7), KERNELS) == 2


def speculation(temperature: float = 0.0) -> Speculation:
    return Speculation(SimpleNamespace(kernels=KERNELS), None, 3, temperature, seed=9)


def test_greedy_judge_accepts_the_longest_matching_prefix_ties_to_the_lower_id() -> None:
    logits = np.zeros((4, 6), np.float32)
    logits[0, 4] = 2  # column 0 argmax 4
    logits[1, 1] = 3  # column 1 argmax 1
    logits[2, [2, 5]] = 1  # a tie: 2 wins
    logits[3, 3] = 1
    assert speculation().judge(logits, [4, 1, 5], 10) == (2, 2)  # 5 loses the tie: correction 2
    assert speculation().judge(logits, [4, 1, 2], 10) == (3, 3)  # all accepted: bonus of column 3
    assert speculation().judge(logits, [0, 1, 2], 10) == (0, 4)  # first rejected: correction 4


def test_sampled_judge_accepts_a_sure_draft_and_corrects_an_impossible_one() -> None:
    logits = np.zeros((3, 5), np.float32)
    logits[0, 3] = 200  # p(3) = 1: accepted whatever u
    logits[1, 2] = -200  # p(2) = 0: rejected whatever u; the correction is never 2
    accepted, correction = speculation(1.0).judge(logits, [3, 2], 0)
    assert accepted == 1 and correction != 2 and 0 <= correction < 5
