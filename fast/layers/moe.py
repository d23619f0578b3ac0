"""The MoE routing's parts every family's fast path shares (spec/models.md §qwen3-moe-forward,
§qwen35-ffn): the router's softmax in C (spec/numerics.md §softmax; the top-k and renormalisation
stay the reference's `choose`: a few scalar operations on k values, no second implementation)
and the chosen experts' token lists the C expert calls take."""

from __future__ import annotations

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import kernels


def router_softmax(logits: np.ndarray) -> np.ndarray:
    """spec/numerics.md §softmax of every row of the router logits [T, E] (the C form the
    attention uses), equal to the reference kernels' softmax of the canonical profile."""
    probs = np.array(logits, dtype=np.float32, order="C", copy=True)
    kernels().wf_softmax_rows(address(probs), probs.shape[0], probs.shape[1])
    return probs


def expert_lists(routes: list[list[tuple[int, np.float32]]]) -> tuple[np.ndarray, ...]:
    """(ids int32 [n], start int64 [n + 1], tokens int64, weights float32) of the chosen
    experts in ascending index, each with its tokens in ascending order."""
    chosen: dict[int, list[tuple[int, np.float32]]] = {}
    for t, r in enumerate(routes):
        for e, w in r:
            chosen.setdefault(int(e), []).append((t, w))
    ids = sorted(chosen)
    start = np.zeros(len(ids) + 1, dtype=np.int64)
    start[1:] = np.cumsum([len(chosen[e]) for e in ids])
    tok = np.array([t for e in ids for t, _ in chosen[e]], dtype=np.int64)
    wt = np.array([w for e in ids for _, w in chosen[e]], dtype=np.float32)
    return np.array(ids, dtype=np.int32), start, tok, wt
