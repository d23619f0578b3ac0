"""The separate multiply-then-add peak probe (fast/csrc/mul_add_peak.c) that `weightfile bench`
reports beside the Qwen3.5 vision tower (weightfile/bench/vision35.py): it runs every lane of its
tile for every step, so the work it reports is the work it did."""

import pytest

from weightfile.fast._native import each_isa, library

pytestmark = pytest.mark.skipif(library() is None, reason="no C kernels")

#: Accumulator lanes per path: a tile of 4 weight vectors by 5 activation vectors of 16 lanes on
#: AVX-512, 4 by 2 of 8 on AVX2; no probe on the other paths.
LANES = {"avx512": 4 * 5 * 16, "avx2": 4 * 2 * 8}


@pytest.mark.parametrize("steps", [1, 3, 1000, (1 << 24) - 1])
def test_every_lane_adds_w_times_x_once_per_step(steps: int) -> None:
    """w = 0.5, x = 1: each lane ends at 0.5 · steps exactly (below 2^24 steps), and the probe
    returns the sum of its lanes, 0.5 · lanes · steps; 0 where the path has no probe."""
    lib = library()
    for isa in each_isa():
        assert lib.wf_mul_add_peak(steps) == 0.5 * LANES.get(isa, 0) * steps, isa


def test_no_step_no_work() -> None:
    for _isa in each_isa():
        assert library().wf_mul_add_peak(0) == 0.0
