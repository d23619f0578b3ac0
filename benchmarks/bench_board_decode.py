"""The kestrel-board decode step against the canonical fast one, interleaved (issue 33 item 4).

Not a test: run `python benchmarks/bench_board_decode.py [MODEL.vqf] [--steps 32] [--threads 1 2]`
(default model: the `qwen3-vl-2b-text-q8_0-L2` synthetic of `weightfile bench`). `weightfile
bench --profile kestrel-board` times all canonical rows, then all board rows: on a shared
machine the load moves between the two and the ratio with it. Here the two decoders take turns,
one step each, on the same file and thread count, from the same empty cache and the same tokens,
so both see the same load; the ratio is of the median step times (board t/s ÷ canonical t/s,
the bench's `board_decode_ratio`), with the spread of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

from machine import describe_machine

from weightfile.bench import engines
from weightfile.bench.synthetic import synthetic_model
from weightfile.fast.qwen3.board.model import bind_board_fast
from weightfile.ref.vqf.read import open_vqf


def interleaved(canonical, board, steps: int) -> tuple[list[float], list[float]]:
    """Per-step seconds of each decoder, one step of each in turn."""
    c_cache, b_cache = canonical.new_cache(), board.new_cache()
    c_times, b_times = [], []
    for i in range(steps + 1):
        token = 1 + (i * 7919) % 1000
        t0 = time.perf_counter()
        canonical.forward([token], c_cache)
        t1 = time.perf_counter()
        board.decode_step(token, b_cache)
        t2 = time.perf_counter()
        if i:  # the first step of each warms its code paths
            c_times.append(t1 - t0)
            b_times.append(t2 - t1)
    return c_times, b_times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    path = args.model or synthetic_model("qwen3-vl-2b-text-q8_0-L2")[0]
    print(describe_machine())
    with open_vqf(path) as vqf:
        for n in args.threads:
            canonical, board = engines.open_fast(vqf, n), bind_board_fast(vqf, threads=n)
            c, b = interleaved(canonical, board, args.steps)
            pairs = sorted(ci / bi for ci, bi in zip(c, b, strict=True))
            q1, q3 = pairs[len(pairs) // 4], pairs[3 * len(pairs) // 4]
            ratio = statistics.median(c) / statistics.median(b)
            print(
                f"{n} thread(s), {args.steps} steps: canonical {1 / statistics.median(c):.2f} t/s,"
                f" board {1 / statistics.median(b):.2f} t/s, board ÷ canonical {ratio:.3f}"
                f" (per pair: quartiles {q1:.3f}-{q3:.3f})"
            )


if __name__ == "__main__":
    main()
