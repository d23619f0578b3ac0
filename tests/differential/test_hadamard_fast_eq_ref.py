"""fast hadamard_rows equals the reference spec/numerics.md §hadamard transform bit for bit
(NaNs compared as NaN, whatever their payload and sign: spec/numerics.md §special-values), on
inputs reaching the hard cases: additions that tie (random 24-bit integers: every odd sum of two
of them is a tie), subnormal inputs and outputs, values near FLT_MAX (overflow, inf − inf), raw
bit patterns (NaN, ±inf, −0), and random signs; 1–3 tokens, one or two blocks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast.numerics.hadamard import hadamard_rows
from weightfile.ref.numerics.hadamard import hadamard

K = 1024
KINDS = ("ties", "subnormal", "huge", "bits", "gaussian")


def values(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "ties":  # 24-bit integers times one power of two: sums need 25 bits
        k = rng.integers(2**23, 2**24, size=shape) * rng.choice([-1, 1], size=shape)
        return (k * 2.0 ** int(rng.integers(-40, 40))).astype(np.float32)
    if kind == "subnormal":  # results below 2^-121 round at the scale
        return (rng.integers(-(2**20), 2**20, size=shape) * 2.0**-149).astype(np.float32)
    if kind == "huge":
        return (rng.uniform(-1, 1, size=shape) * 3.4e38).astype(np.float32)
    if kind == "bits":
        return (
            rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32).view(np.float32)
        )
    return (rng.standard_normal(shape) * 10.0 ** int(rng.integers(-30, 30))).astype(np.float32)


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    tokens, blocks = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (tokens, K * blocks)
    x = values(rng, draw(st.sampled_from(KINDS)), shape)
    if draw(st.booleans()):  # a second kind mixed in at random places
        mask = rng.random(shape) < 0.3
        x[mask] = values(rng, draw(st.sampled_from(KINDS)), shape)[mask]
    signs = rng.choice([-1, 1], size=K * blocks)
    return x, signs


def same(got: np.ndarray, want: np.ndarray) -> bool:
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all() and (got[~nan].view(np.uint32)
                == want[~nan].view(np.uint32)).all())  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_fast_hadamard_equals_ref(case: tuple[np.ndarray, np.ndarray]) -> None:
    x, signs = case
    want = np.array([hadamard(list(row), list(signs)) for row in x], dtype=np.float32)
    got = hadamard_rows(x, signs)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert same(got, want)
    assert same(hadamard_rows(x[0], signs), want[0])  # one vector, as a Use's input


def test_the_comparison_can_fail() -> None:
    """A changed stage order (stride 512 first) is caught on tie-heavy input."""
    rng = np.random.default_rng(0)
    x = values(rng, "ties", (1, K))
    signs = np.ones(K, dtype=int)
    want = hadamard_rows(x, signs)
    y = x.reshape(-1, K).copy()
    h = K // 2
    while h >= 1:
        pairs = y.reshape(1, -1, 2, h)
        a, b = pairs[:, :, 0, :], pairs[:, :, 1, :]
        y = np.stack((a + b, a - b), axis=2).reshape(1, K)
        h //= 2
    assert not same(y * np.float32(1 / 32), want)
