"""The corpus's one source of seeded values, specified bit for bit (conformance/README.md,
"Regenerating and versioning").

NumPy's `default_rng` streams and its normal / integer samplers are not promised to stay the
same across releases (NEP 19), so the corpus does not use them. Instead:

* `words(seed, n)` is the SplitMix64 stream of ref/layers/sampling.py: for i = 1..n the state is
  seed + i·0x9E3779B97F4A7C15 (mod 2^64), then mixed by two xor-shift-multiply rounds and a
  final xor-shift. Computed on whole uint64 arrays (numpy's uint64 arithmetic wraps mod 2^64).
* `uniform(seed, shape, scale)` maps word w to ((w >> 40) − 2^23) · 2^−23, an exact float32 in
  [−1, 1) on a 2^−23 grid, then multiplies it by float32(scale) — one correctly rounded IEEE
  float32 product per element, so no library's math functions are involved.
* `integers(seed, shape)` takes the low 32 bits of each word as an int32 (two's complement).
"""

from __future__ import annotations

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


def words(seed: int, count: int) -> np.ndarray:
    """The first `count` SplitMix64 outputs for `seed` (uint64)."""
    i = np.arange(1, count + 1, dtype=np.uint64)
    z = np.uint64(seed % 2**64) + i * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


def uniform(seed: int, shape: int | tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    """float32 values scale·u, u exact in [−1, 1) on a 2^−23 grid, C order over `shape`."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    top = (words(seed, count) >> np.uint64(40)).astype(np.int64) - (1 << 23)
    unit = top.astype(np.float32) * np.float32(2.0**-23)  # exact: |top| < 2^24
    return (unit * np.float32(scale)).reshape(dims)


def integers(seed: int, shape: int | tuple[int, ...]) -> np.ndarray:
    """int32 values: the low 32 bits of each word, reinterpreted as two's complement."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    low = (words(seed, count) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return low.view(np.int32).reshape(dims)
