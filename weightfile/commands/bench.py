"""`weightfile bench`: the board-side performance run (issue 6, part 3)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from ._common import add_passphrase_argument, passphrase, positive_int


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="measure open, checksum, dequantize, matvec and forward speed, bandwidth, peak RSS",
        description=(
            "Benchmark a VQF model on this machine: open time, checksum and dequantize "
            "throughput, quantized matrix-vector GB/s at the model's real shapes, prefill and "
            "decode tokens/s of the fast and reference engines, the measured memory read "
            "bandwidth and the decode roofline, and peak RSS against the memory bound. "
            "--synthetic NAME generates (once, cached) a model of a real geometry: "
            "qwen3-0.6b-q4_0, qwen3-0.6b-q8_0, qwen3-vl-2b-text-q4_0, qwen3-vl-2b-text-q8_0, "
            "tiny-q4_0, tiny-q8_0, qwen3-30b-a3b-q4_0, qwen3-30b-a3b-q8_0, tiny-moe-q4_0, "
            "tiny-moe-q8_0; NAME-L<n> keeps the first n layers."
        ),
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("model", nargs="?", help="a .vqf file")
    what.add_argument("--synthetic", metavar="NAME", help="a synthetic model of real geometry")
    parser.add_argument(
        "--threads",
        type=positive_int,
        nargs="+",
        default=None,
        metavar="N",
        help="thread counts for the fast engine (default: 1 and every cpu)",
    )
    parser.add_argument(
        "--tokens",
        type=positive_int,
        default=8,
        help="prefill this many tokens, then decode as many (default 8)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="where synthetic models live (default $XDG_CACHE_HOME/weightfile/"
        "synthetic, or $WEIGHTFILE_CACHE/synthetic)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child process")
    parser.add_argument(
        "--bandwidth-mib",
        type=positive_int,
        default=256,
        help="buffer read by the bandwidth probe (default 256 MiB)",
    )
    add_passphrase_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.bench.report import run_bench
    from weightfile.bench.synthetic import synthetic_model
    from weightfile.bench.table import format_report

    if args.tokens < 1 or args.bandwidth_mib < 1 or any(n < 1 for n in args.threads or ()):
        print(
            "weightfile bench: --tokens, --threads and --bandwidth-mib must be ≥ 1", file=sys.stderr
        )
        return 2
    path = args.model
    if args.synthetic is not None:
        start = time.perf_counter()
        path, built = synthetic_model(args.synthetic, args.cache_dir)
        if built:
            took = time.perf_counter() - start
            print(f"generated {path} in {took:.1f} s", file=sys.stderr)
    threads = sorted(set(args.threads or (1, os.cpu_count() or 1)))
    report = run_bench(
        path,
        threads=threads,
        tokens=args.tokens,
        synthetic=args.synthetic,
        rss=not args.no_rss,
        bandwidth_buffer=args.bandwidth_mib << 20,
        passphrase=passphrase(args),
    )
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
