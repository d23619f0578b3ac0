"""Unit checks of the board tower's operations against the fact sheet's statements
(spec/numerics.md §board-vision-attention, §board-vision-merge)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.ref.qwen3_vl.board.attention import scores, tree_vectors
from weightfile.ref.qwen3_vl.board.tower import merge_windows

F32 = np.float32


def test_the_score_tree_drops_what_the_engine_drops() -> None:
    """hd 32 and 64 (n = 8, 16) are exact; hd 24 (n = 6) loses vectors 2 and 5 (elements 8..11
    and 20..23), hd 72 (n = 18) vectors 8 and 17 (elements 32..35 and 68..71): the fact sheet's
    list (the kestrel-board-v2 fact sheet, restated in spec/numerics.md §board-vision-attention)."""
    assert tree_vectors(8) == list(range(8)) and tree_vectors(16) == list(range(16))
    assert sorted(set(range(6)) - set(tree_vectors(6))) == [2, 5]
    assert sorted(set(range(18)) - set(tree_vectors(18))) == [8, 17]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([24, 72]))
def test_scores_ignore_exactly_the_dropped_elements(seed: int, hd: int) -> None:
    """Changing q at a dropped element leaves every score's bits; changing one kept element
    changes the exact score (the test's own binary64 dot over the kept elements says by how
    much)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 3, hd)).astype(F32)
    dropped = [
        4 * v + j for v in set(range(hd // 4)) - set(tree_vectors(hd // 4)) for j in range(4)
    ]
    base = scores(q, k, F32(1.0))
    q2 = q.copy()
    q2[:, dropped] = rng.standard_normal((3, len(dropped))).astype(F32) * 100
    assert np.array_equal(scores(q2, k, F32(1.0)).view(np.uint32), base.view(np.uint32))
    kept = [i for i in range(hd) if i not in dropped]
    want = q[:, kept].astype(np.float64) @ k[:, kept].astype(np.float64).T
    assert np.allclose(base, want, rtol=1e-5, atol=1e-5)


def test_merge_windows_drops_the_odd_row_and_column() -> None:
    """A 3x5 grid of patch numbers: one row of two tokens, [dy][dx] order, row 2 and column 4
    in none (spec/numerics.md §board-vision-merge)."""
    x = np.arange(15, dtype=F32).reshape(15, 1)
    m = merge_windows(x, 3, 5)
    assert m.tolist() == [[0, 1, 5, 6], [2, 3, 7, 8]]
