"""The machine's measured memory read bandwidth, single-core and all-core (issue 6).

The decode roofline divides the weight bytes a token reads by this number, so it is measured
here, in the same run, rather than taken from a data sheet. One pass reads a buffer far larger
than any cache (256 MiB by default) with the C probe fast/csrc/membw.c; without a C compiler a
NumPy reduction stands in (slower per byte, so it understates the machine: reported as such).
All-core splits the buffer across threads that start together; each C call releases the GIL.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from weightfile.fast._native import library

DEFAULT_BUFFER = 256 << 20
REPEATS = 3


@dataclass(frozen=True)
class Bandwidth:
    """Read bandwidth in bytes per second; `method` says which probe measured it."""

    single_core: float
    all_core: float
    threads: int
    method: str  # "c" (fast/csrc/membw.c) or "numpy"
    buffer_bytes: int


def reader() -> tuple[Callable[[np.ndarray], int], str]:
    """A function reading every word of a uint64 array once, and the probe's name."""
    lib = library()
    if lib is None:
        return (lambda words: int(np.bitwise_xor.reduce(words))), "numpy"
    return (lambda words: int(lib.wf_membw_read(words.ctypes.data, words.size))), "c"


def touched_buffer(nbytes: int) -> np.ndarray:
    """A uint64 buffer whose pages are really allocated (zero pages would be read from cache)."""
    words = np.empty(max(nbytes // 8, 1), dtype=np.uint64)
    words.fill(1)
    return words


def timed_parallel(read: Callable[[np.ndarray], int], parts: list[np.ndarray]) -> float:
    """Seconds from the first thread's start to the last one's end, all parts read at once."""
    barrier = threading.Barrier(len(parts))
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    def run(part: np.ndarray) -> None:
        barrier.wait()
        start = time.perf_counter()
        read(part)
        end = time.perf_counter()
        with lock:
            spans.append((start, end))

    workers = [threading.Thread(target=run, args=(p,)) for p in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return max(e for _, e in spans) - min(s for s, _ in spans)


def measure_bandwidth(
    buffer_bytes: int = DEFAULT_BUFFER, threads: int | None = None, repeats: int = REPEATS
) -> Bandwidth:
    """Best of `repeats` passes, one thread then `threads` (default: every cpu)."""
    n = threads or os.cpu_count() or 1
    read, method = reader()
    words = touched_buffer(buffer_bytes)
    read(words)  # warm: page tables, the library's first call
    nbytes = words.nbytes
    single = min(timed_parallel(read, [words]) for _ in range(repeats))
    parts = np.array_split(words, n)
    multi = min(timed_parallel(read, parts) for _ in range(repeats))
    return Bandwidth(nbytes / single, nbytes / multi, n, method, nbytes)
