"""The Gated DeltaNet steps (spec/numerics.md §gdn) on small hand-derived cases, exact in f32."""

from __future__ import annotations

import numpy as np

from weightfile.ref.numerics.deltanet import (
    causal_conv,
    delta_rule_step,
    gated_rmsnorm,
    l2normalize,
)
from weightfile.ref.numerics.exp import silu

F = np.float32


def test_causal_conv_taps_multiply_oldest_first() -> None:
    weight = np.array([[1, 2], [3, 4]], dtype=F)  # [kernel 2, channels 2]
    window = [[F(1), F(1)], [F(2), F(3)]]  # previous input, then the newest
    assert causal_conv(weight, window) == [F(7), F(14)]  # 1·1 + 3·2, 2·1 + 4·3


def test_delta_rule_by_hand() -> None:
    state = np.zeros((2, 2), F)
    s1, o1 = delta_rule_step(state, [F(1), F(1)], [F(1), F(0)], [F(2), F(3)], F(1), F(0.5))
    # memory 0, δ = (v − 0)·0.5 = [1, 1.5], S = k δᵀ, o = Sᵀ q
    assert (s1 == np.array([[1, 1.5], [0, 0]], F)).all() and o1 == [F(1), F(1.5)]
    s2, o2 = delta_rule_step(s1, [F(0), F(1)], [F(1), F(0)], [F(4), F(4)], F(0.5), F(1))
    # decay: S = [[.5, .75], 0]; memory = Sᵀk = [.5, .75]; δ = [3.5, 3.25]; S = [[4, 4], 0]
    assert (s2 == np.array([[4, 4], [0, 0]], F)).all() and o2 == [F(0), F(0)]
    assert (state == 0).all()  # the input state is not modified


def test_l2normalize_3_4_5() -> None:
    out = l2normalize([F(3), F(4)], F(0))
    assert out == [F(3) * (F(1) / F(5)), F(4) * (F(1) / F(5))]
    assert abs(float(out[0]) - 0.6) < 1e-7 and abs(float(out[1]) - 0.8) < 1e-7


def test_gated_rmsnorm_uses_the_weight_as_stored_and_silu_of_the_gate() -> None:
    x, w, z = [F(1), F(-1)], [F(2), F(3)], [F(0), F(1)]
    out = gated_rmsnorm(x, w, z, F(0), silu)
    # rms of (1, -1) is 1: normed (2, -3); silu(0) = 0, silu(1) = 1/(1+e^-1)
    assert out[0] == 0 and out[1] == F(-3) * silu(F(1))
