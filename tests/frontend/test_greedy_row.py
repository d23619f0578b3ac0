"""generate.greedy_row picks exactly the token ref.layers.sampling.greedy picks (first index of the
largest logit; NaN only wins at index 0), on float32 rows with ties, signed zeros, infinities and
NaNs, at lengths that reach NumPy's vectorised argmax."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from weightfile.frontend.generate import greedy_row, stream_tokens
from weightfile.ref.layers.sampling import greedy

#: A small pool makes ties likely; the specials are the cases a plain argmax gets wrong.
SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, float("inf"), float("-inf"), float("nan")]
values = st.one_of(
    st.sampled_from(SPECIALS), st.floats(width=32, allow_nan=True, allow_infinity=True)
)


@given(st.lists(values, min_size=1, max_size=300))
def test_greedy_row_equals_the_reference_loop(row: list[float]) -> None:
    logits = np.array(row, dtype=np.float32)
    assert greedy_row(logits) == greedy([np.float32(v) for v in logits])


def test_hand_cases() -> None:
    nan, inf = float("nan"), float("inf")
    assert greedy_row(np.array([1, 3, 3, 2], np.float32)) == 1  # the first of a tie
    assert greedy_row(np.array([nan, 5, 9], np.float32)) == 0  # nothing beats a leading NaN
    assert greedy_row(np.array([1, nan, 0.5], np.float32)) == 0  # a later NaN never wins
    assert greedy_row(np.array([-0.0, 0.0], np.float32)) == 0  # equal zeros: the first
    assert greedy_row(np.array([-inf, nan, -inf], np.float32)) == 0
    assert greedy_row(np.array([-inf, nan, inf], np.float32)) == 2


class ScriptedModel:
    """Returns scripted logit rows, one per forward call, and records the tokens fed in."""

    kernels = None

    def __init__(self, rows: list[list[float]]) -> None:
        self.rows = [np.array([r], dtype=np.float32) for r in rows]
        self.fed: list[list[int]] = []

    def new_cache(self) -> object:
        return object()

    def forward(self, token_ids: list[int], cache: object) -> np.ndarray:
        self.fed.append(list(token_ids))
        return self.rows[len(self.fed) - 1]


def test_stream_tokens_greedy_uses_the_reference_rule() -> None:
    """Ties, a leading NaN and a later NaN pick as the reference does; no forward pass runs
    after the last token (it was computed and thrown away before)."""
    nan = float("nan")
    model = ScriptedModel([[0, 7, 7, 1], [nan, 9, 9, 9], [1, nan, 3, 3], [0, 0, 0, 0]])
    assert list(stream_tokens(model, [3], max_new_tokens=3)) == [1, 0, 2]
    assert model.fed == [[3], [1], [0]]
