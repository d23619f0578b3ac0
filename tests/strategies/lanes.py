"""Dot-product tails whose lane placement shows in the result (issue 36 item 8).

spec/numerics.md §lanes puts term i of a sum in lane i mod 8; the SIMD kernels
(fast/csrc/ops_body.h) add whole groups of 8 in vector registers (two of 4 lanes on NEON, one of
8 on AVX2) and the tail terms one at a time, each into its lane, before the §combining-tree tree.
Random inputs rarely notice a tail term in the wrong lane: the sums differ by an ulp at most, and
RMSNorm's r = 1 / sqrt(ss / n + eps) often rounds that away.

`tail_cases(n)` builds RMSNorm rows of length n (weights 1) such that, for every tail position j
and every other lane k, at least one row's output changes when the term x_j² goes to lane k
instead of lane j mod 8. Rows are drawn from a few magnitudes (squares 0, 1, 2.25, 2^24, ...
so that lanes round differently when they meet) and kept only when the model below, plain
binary32 NumPy arithmetic written from the spec text, says they separate some (j, k) not yet
separated. The model only picks inputs; the tests compare the kernels with ref/numerics.
"""

from __future__ import annotations

from functools import cache

import numpy as np

F32 = np.float32
LANES = 8
EPS = F32(1e-6)
#: every tail length for both lane widths (n mod 8 and n mod 4 all reached, 0-2 whole groups and
#: a few longer rows)
LENGTHS = [n for n in range(1, 24) if n % LANES] + [37, 69]
#: element magnitudes: their squares are exact and meet with rounding at 2^24 (ulp 2)
MAGNITUDES = np.array([0.0, 1.0, 1.5, 3.0, 0.5, 4096.0, 4097.0, 6144.0, 2896.0, 8192.0], F32)


def _combine(lanes: list[np.float32]) -> np.float32:
    """spec/numerics.md §combining-tree."""
    s = [lanes[j] + lanes[j + 4] for j in range(4)]
    return (s[0] + s[2]) + (s[1] + s[3])


def model_rmsnorm(x: np.ndarray, moved: tuple[int, int] | None = None) -> np.ndarray:
    """RMSNorm of x with weights 1 (spec/numerics.md §rmsnorm), term i in lane i mod 8, except
    `moved` = (i, k): term i in lane k."""
    n = len(x)
    lanes = [F32(0.0)] * LANES
    for i in range(n):
        lane = moved[1] if moved is not None and moved[0] == i else i % LANES
        lanes[lane] = lanes[lane] + x[i] * x[i]
    r = F32(1.0) / np.sqrt(_combine(lanes) / F32(n) + EPS)
    return (x * r) * F32(1.0)


@cache
def tail_cases(n: int) -> tuple[np.ndarray, set[tuple[int, int]]]:
    """(rows float32 [m, n], the (tail index, wrong lane) pairs no row separates). Deterministic.
    Below 8 terms some pairs cannot be separated (empty lanes make placements equivalent: lanes j
    and j + 4 meet first, so with nothing else in them either order gives t ⊕ 0 ⊕ ...), so those
    lengths get a smaller search."""
    rng = np.random.default_rng(n)
    budget = 4000 if n >= LANES else 300
    whole = n - n % LANES
    todo = {(i, k) for i in range(whole, n) for k in range(LANES) if k != i % LANES}
    rows = []
    for _ in range(budget):
        if not todo:
            break
        x = rng.choice(MAGNITUDES, size=n) * rng.choice(np.array([-1, 1], F32), size=n)
        want = model_rmsnorm(x).view(np.uint32)
        hit = {p for p in todo if not np.array_equal(model_rmsnorm(x, p).view(np.uint32), want)}
        if hit:
            rows.append(x.astype(F32))
            todo -= hit
    return np.stack(rows) if rows else np.zeros((0, n), F32), todo
