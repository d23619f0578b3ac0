"""Measure the canonical exp against correctly rounded results over every binary32 input.

Usage: python tools/exp_error.py [--stride N]

Every finite binary32 x in [X_MIN, X_MAX] (spec/numerics.md §exp) is fed to
`weightfile.ref.numerics.exp.exp` -- the very function the reference uses -- in chunks. The true
value is exp in binary64 (error below 1e-15 relative, i.e. ~1e-8 of a binary32 ulp); where that
leaves the correctly rounded binary32 result in doubt (within 2^-48 relative of a rounding
midpoint) the input is re-evaluated with mpmath at 200 bits. Inputs outside [X_MIN, X_MAX] give
+0 or +inf, which are the correctly rounded results there by construction of the bounds.

Prints: inputs checked, max error in binary32 ulps (of the exact value), how many results
differ from the correctly rounded one, and how many are off by more than one ulp.
`--stride N` checks every N-th bit pattern only (a quick look; the doc quotes stride 1).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import mpmath
import numpy as np

from weightfile.ref.numerics.exp import X_MAX, X_MIN, exp
from weightfile.ref.numerics.f32 import f32_bits

CHUNK = 1 << 22


def ulp_of(e: np.ndarray) -> np.ndarray:
    """The binary32 ulp at the exact value e (subnormal spacing below 2**-126)."""
    _, ex = np.frexp(e)
    return np.ldexp(1.0, np.maximum(ex - 24, -149))


def correctly_rounded(x: np.float32) -> np.float32:
    """exp(x) rounded to binary32 from a 200-bit evaluation (used only for doubtful cases)."""
    with mpmath.workprec(200):
        return np.float32(float(mpmath.exp(mpmath.mpf(float(x)))))  # 200 -> 53 -> 24 bits


def check_chunk(bits: np.ndarray) -> tuple[float, int, int]:
    """(max ulp error, results != correctly rounded, results off by > 1 ulp) for these inputs."""
    x = bits.view(np.float32)
    y = exp(x).astype(np.float64)
    e = np.exp(x.astype(np.float64))
    ulp = ulp_of(e)
    err = np.abs(y - e) / ulp
    cr = e.astype(np.float32)
    # distance of e from the nearest rounding midpoint, relative to e
    mid_dist = np.abs(np.abs(e - cr.astype(np.float64)) - ulp / 2) / e
    doubtful = np.nonzero(mid_dist < 2.0**-48)[0]
    for i in doubtful:
        cr[i] = correctly_rounded(x[i])
    wrong = int(np.count_nonzero(cr != y.astype(np.float32)))
    return float(err.max()), wrong, int(np.count_nonzero(err > 1.0))


def ranges() -> list[tuple[int, int]]:
    """Bit-pattern ranges [lo, hi] of +0..X_MAX and -0..X_MIN."""
    return [(0, f32_bits(X_MAX)), (0x80000000, f32_bits(X_MIN))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=1)
    args = parser.parse_args()
    start = time.perf_counter()
    worst, wrong, over1, count = 0.0, 0, 0, 0
    for lo, hi in ranges():
        for base in range(lo, hi + 1, CHUNK * args.stride):
            top = min(base + CHUNK * args.stride, hi + 1)
            bits = np.arange(base, top, args.stride, dtype=np.uint64).astype(np.uint32)
            w, n_wrong, n_over = check_chunk(bits)
            worst = max(worst, w)
            wrong, over1, count = wrong + n_wrong, over1 + n_over, count + len(bits)
    print(f"machine: {platform.machine()} {platform.processor()} {os.cpu_count()} cpus")
    print(f"python {platform.python_version()}")
    print(f"numpy {np.__version__}; inputs checked: {count} (stride {args.stride})")
    print(f"max error: {worst:.4f} ulp")
    print(f"results != correctly rounded: {wrong} ({wrong / count:.3%})")
    print(f"results off by more than 1 ulp: {over1}")
    print(f"time: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
