"""Dot-product tails whose lane placement shows in the result (issue 36 item 8).

spec/numerics.md §lanes puts term i of a sum in lane i mod 8; the SIMD kernels
(fast/csrc/ops_body.h) add whole groups of 8 in vector registers (two of 4 lanes on NEON, one of
8 on AVX2) and the tail terms one at a time, each into its lane, before the spec/numerics.md
§combining-tree tree.
Random inputs rarely notice a tail term in the wrong lane: the sums differ by an ulp at most, and
RMSNorm's r = 1 / sqrt(ss / n + eps) often rounds that away.

`softmax_tail_cases(n)` does the same for the other lane sum, softmax's sum of exponentials
(spec/numerics.md §softmax, ops_body.h's sum), through one-position-per-column attention: query
(1, 0, …), key j (a_j, 0, …), value j the unit vector e_j, so the output is the probabilities
p_j = exp(s_j − m) ⊘ S themselves and any change of S shows. The exponentials come from
ref/numerics/exp (the model only picks inputs).

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

from weightfile.ref.numerics import exp

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
        if hit or not rows:  # the first row too: a length with no separable pair still runs
            rows.append(x.astype(F32))
            todo -= hit
    return np.stack(rows), todo


#: scores whose exponentials span 2^0 .. 2^-25 (ln 2 multiples and between)
SCORES = np.array([0.0, -0.5, -0.6931472, -1.0, -2.0, -3.4657359, -8.317766, -10.397208,
                   -16.635532, -17.32868], dtype=np.float64)  # fmt: skip


def attention_head_dim(n: int) -> int:
    """The head size that holds one value column per position (a multiple of 32)."""
    return 32 * -(-n // 32)


def model_probabilities(a: np.ndarray, hd: int, moved: tuple[int, int] | None = None):
    """Softmax of the scores fl(a_j · (1 ⊘ sqrt(hd))) with the exponentials summed in lanes
    (term i in lane i mod 8, or `moved` = (i, k) in lane k) and the spec/numerics.md
    §combining-tree tree."""
    scale = F32(1.0) / np.sqrt(F32(hd))
    s = a.astype(F32) * scale
    with np.errstate(all="ignore"):
        e = exp.exp(s - np.max(s))
    lanes = [F32(0.0)] * LANES
    for i in range(len(e)):
        lane = moved[1] if moved is not None and moved[0] == i else i % LANES
        lanes[lane] = lanes[lane] + e[i]
    return e / _combine(lanes)


@cache
def softmax_tail_cases(n: int) -> tuple[np.ndarray, set[tuple[int, int]]]:
    """(key values a float32 [m, n], one attention head each, and the (tail index, wrong lane)
    pairs no head separates). Deterministic."""
    rng = np.random.default_rng(1000 + n)
    hd = attention_head_dim(n)
    scale = np.float64(F32(1.0) / np.sqrt(F32(hd)))
    budget = 4000 if n >= LANES else 300
    whole = n - n % LANES
    todo = {(i, k) for i in range(whole, n) for k in range(LANES) if k != i % LANES}
    rows = []
    for _ in range(budget):
        if not todo:
            break
        a = (rng.choice(SCORES, size=n) / scale).astype(F32)
        want = model_probabilities(a, hd).view(np.uint32)
        hit = {
            p
            for p in todo
            if not np.array_equal(model_probabilities(a, hd, p).view(np.uint32), want)
        }
        if hit or not rows:  # the first row too: a length with no separable pair still runs
            rows.append(a)
            todo -= hit
    return np.stack(rows), todo


def attention_inputs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(q [m·hd], keys [n, m·hd], values [n, m·hd], hd) for m heads of m kv heads (group 1):
    head h's query (1, 0, …), key j (a[h, j], 0, …), value j the unit vector of column j."""
    m, n = a.shape
    hd = attention_head_dim(n)
    q = np.zeros(m * hd, F32)
    keys = np.zeros((n, m * hd), F32)
    values = np.zeros((n, m * hd), F32)
    for h in range(m):
        q[h * hd] = 1.0
        keys[:, h * hd] = a[h]
        values[np.arange(n), h * hd + np.arange(n)] = 1.0
    return q, keys, values, hd
