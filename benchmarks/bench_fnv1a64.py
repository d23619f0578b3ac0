"""FNV-1a-64 throughput: the C kernel next to the pure-Python reference, measured in one run.

    python benchmarks/bench_fnv1a64.py [--mib 256]

FNV-1a is a serial multiply chain, so one byte per multiply latency is the ceiling (about
0.9 GB/s for a plain C loop on the development machine); the C kernel should sit near it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from machine import describe_machine

from weightfile.fast import _native
from weightfile.fast.vqf.fnv1a64 import fnv1a64 as fast_fnv
from weightfile.ref.vqf.fnv1a64 import fnv1a64 as ref_fnv


def best_rate(fn, data: bytes, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - start)
    return len(data) / best / 1e9


PLAIN_LOOP = """
#include <stddef.h>
#include <stdint.h>
uint64_t plain_fnv(const uint8_t *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return h;
}
"""


def plain_c_loop():
    """The ceiling: the textbook byte loop, built with the same compiler and flags."""
    folder = Path(tempfile.mkdtemp(prefix="wf-bench-"))
    src = folder / "plain.c"
    src.write_text(PLAIN_LOOP)
    lib = ctypes.CDLL(str(_native.build(_native.compiler(), [src], folder)))
    lib.plain_fnv.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64)
    lib.plain_fnv.restype = ctypes.c_uint64

    def run(data: bytes, h: int = 0xCBF29CE484222325) -> int:
        arr = np.frombuffer(data, np.uint8)
        return int(lib.plain_fnv(arr.ctypes.data, arr.size, h))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256, help="buffer for the C kernel")
    args = parser.parse_args()
    if _native.library() is None:
        raise SystemExit("the C kernels are unavailable here; nothing to compare")
    big = os.urandom(args.mib << 20)
    small = big[: 2 << 20]  # the reference loop would take minutes on the big buffer
    assert fast_fnv(small) == ref_fnv(small)
    plain = plain_c_loop()
    assert plain(small) == ref_fnv(small)
    ceiling = best_rate(plain, big, 5)
    fast = best_rate(fast_fnv, big, 5)
    ref = best_rate(ref_fnv, small, 2)
    print(f"machine: {describe_machine()}")
    print(f"{'implementation':<28}{'buffer':>10}{'GB/s':>10}")
    print(f"{'fast (C kernel, ctypes)':<28}{args.mib:>7} MiB{fast:>10.3f}")
    print(f"{'ref (pure Python)':<28}{2:>7} MiB{ref:>10.4f}")
    print(f"{'plain C byte loop (ceiling)':<28}{args.mib:>7} MiB{ceiling:>10.3f}")
    print(f"fast / ref = {fast / ref:,.0f}×   fast / plain C loop = {fast / ceiling:.2f}")


if __name__ == "__main__":
    main()
