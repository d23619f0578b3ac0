"""Throughput of the fast VQF Q4_0 / Q8_0 codecs against `gguf.quants`, measured side by side.

Not a test: run `python benchmarks/bench_vqf_codecs.py [--size 4096] [--repeat 3]`. Both sides
quantise the same float32 matrix and dequantize the same payload; the best of `repeat` runs is
reported as MB/s of float32 and as the ratio fast / gguf (goal >= 2 in both directions).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import gguf
import numpy as np

from weightfile.fast.codecs.vqf import q4_0, q8_0


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of `repeat` calls (the least disturbed run on a shared machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{platform.node()} · {cpu} · {os.cpu_count()} cpus · numpy {np.__version__}"


def compare(
    codec: Any, qtype: gguf.GGMLQuantizationType, x: np.ndarray, repeat: int
) -> list[tuple[str, float, float]]:
    """(direction, fast seconds, gguf seconds) for quantize and dequantize of x."""
    n = x.shape[0]
    ours = codec.encode(x, n, n, mode="ggml")
    assert ours == gguf.quants.quantize(x, qtype).tobytes(), "ggml mode must equal gguf here"
    raw = np.frombuffer(ours, dtype=np.uint8).reshape(n, -1)
    return [
        (
            "quantize",
            best_seconds(lambda: codec.encode(x, n, n), repeat),
            best_seconds(lambda: gguf.quants.quantize(x, qtype), repeat),
        ),
        (
            "dequantize",
            best_seconds(lambda: codec.decode(ours, n, n), repeat),
            best_seconds(lambda: gguf.quants.dequantize(raw, qtype), repeat),
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.size
    x = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    mb = x.nbytes / 1e6
    print(f"machine: {machine()}")
    print(f"matrix: {n} x {n} float32 ({mb:.0f} MB), best of {args.repeat}")
    print(f"{'codec':6} {'direction':10} {'fast MB/s':>10} {'gguf MB/s':>10} {'fast/gguf':>10}")
    for codec, qtype in (
        (q4_0, gguf.GGMLQuantizationType.Q4_0),
        (q8_0, gguf.GGMLQuantizationType.Q8_0),
    ):
        for direction, tf, tg in compare(codec, qtype, x, args.repeat):
            print(f"{codec.NAME:6} {direction:10} {mb / tf:10.0f} {mb / tg:10.0f} {tg / tf:10.2f}")


if __name__ == "__main__":
    main()
