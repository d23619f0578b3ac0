"""`weightfile bench`: the board-side performance run, in llama-bench's shape (issue 6 part 3,
issue 15 item 4)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from weightfile import profiles
from weightfile.backends import ENGINES, backend_named

from ._common import (
    EXIT_UNVERIFIABLE,
    UsageError,
    add_force_argument,
    add_passphrase_argument,
    check_destination,
    passphrase,
    positive_int,
)

FORMATS = ("md", "csv", "json", "jsonl")


def int_list(minimum: int) -> Any:
    """An argparse type: comma-separated integers of at least `minimum` ("1,2,4")."""

    def parse(text: str) -> list[int]:
        parts = [p.strip() for p in text.split(",")]
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected integers separated by commas (1,2,4), got {text!r}"
            ) from None
        low = [v for v in values if v < minimum]
        if low:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {low[0]}")
        return values

    return parse


class ExtendLists(argparse.Action):
    """`-t 1,2 -t 4` and `-t 1 2 4` both give [1, 2, 4] (llama-bench takes the comma form)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        have = getattr(namespace, self.dest) or []
        setattr(namespace, self.dest, [*have, *(v for lst in values for v in lst)])


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="measure prefill/decode tokens/s like llama-bench, with bandwidth and the roofline",
        description=(
            "Benchmark a VQF or .ninfer (Qwen3.5 / 3.6) model on this machine, one row per test "
            "as llama-bench prints it: "
            "ppN processes an N-token prompt in one call, tgN generates N tokens one call each, "
            "both from an empty cache, timed -r times (t/s is the mean ± the sample stddev); "
            "-d D runs each test after an untimed D-token prefill into the same cache "
            "(`tg128 @ d1024`, llama-bench's -d; the reference's row stays at depth 0). "
            "Beside the tests: open time, checksum and dequantize throughput, quantized "
            "matrix-vector GB/s at the model's real shapes, the measured memory read bandwidth "
            "per thread count and the decode roofline (what llama-bench lacks), the reference's "
            "decode rate and peak RSS against the memory bound. "
            "--synthetic NAME generates (once, cached) a model of a real geometry: "
            "qwen3-0.6b-q4_0, qwen3-0.6b-q8_0, qwen3-vl-2b-text-q4_0, qwen3-vl-2b-text-q8_0, "
            "qwen3-vl-2b-q4_0, qwen3-vl-2b-q8_0 (with the vision tower: the report adds the image "
            "encode), tiny-q4_0, tiny-q8_0, tiny-vl-q4_0, tiny-vl-q8_0, qwen3-30b-a3b-q4_0, "
            "qwen3-30b-a3b-q8_0, tiny-moe-q4_0, tiny-moe-q8_0; .ninfer (weights q8_g32_fp16 or "
            "bf16): qwen35-0.8b-q8_g32_fp16, qwen35-0.8b-bf16, qwen36-27b-q8_g32_fp16, "
            "qwen36-27b-bf16, qwen36-35b-a3b-q8_g32_fp16, qwen36-35b-a3b-bf16, "
            "tiny-qwen35-q8_g32_fp16, tiny-qwen35-bf16, tiny-qwen35-moe-q8_g32_fp16, "
            "tiny-qwen35-moe-bf16; NAME-L<n> keeps the first n layers."
        ),
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("model", nargs="?", help="a .vqf or .ninfer file")
    what.add_argument("--synthetic", metavar="NAME", help="a synthetic model of real geometry")
    what.add_argument(
        "--mtp", type=positive_int, metavar="K", default=None,
        help="MTP speculative decoding with K drafts (1-5) beside plain decoding on two small "
        "synthetic Qwen3.5 .ninfer models (weightfile/bench/mtp.py), fast engine",
    )  # fmt: skip
    _test_arguments(parser)
    _output_arguments(parser)
    _run_arguments(parser)
    parser.set_defaults(run=run)


def _test_arguments(parser: argparse.ArgumentParser) -> None:
    """What is measured: the thread counts and the pp and tg tests, as llama-bench names them."""
    lists = dict(action=ExtendLists, nargs="+", default=None, metavar="LIST")
    parser.add_argument(
        "-t",
        "--threads",
        type=int_list(1),
        **lists,
        help="thread counts of the fast engine (default: 1 and every cpu)",
    )
    parser.add_argument(
        "-p",
        "--n-prompt",
        type=int_list(0),
        **lists,
        help="prompt lengths of the pp tests, within the model's context; 0 runs none "
        "(default: 512)",
    )
    parser.add_argument(
        "-n",
        "--n-gen",
        type=int_list(0),
        **lists,
        help="generated tokens of the tg tests; 0 runs none (default: 128)",
    )
    parser.add_argument(
        "-d",
        "--n-depth",
        type=int_list(0),
        **lists,
        help="depths: each test runs after an untimed prefill of this many tokens into the same "
        "cache (KV cache, and a Qwen3.5 model's recurrent state), named `tg128 @ d1024`; depth + "
        "test within the model's context; the ref row stays at depth 0 (default: 0)",
    )
    parser.add_argument("--tokens", type=positive_int, default=None, metavar="N",
                        help="shorthand for -p N -n N")  # fmt: skip
    parser.add_argument("-r", "--repetitions", type=positive_int, default=5,
                        metavar="N", help="timed runs of each test (default 5)")  # fmt: skip


def _output_arguments(parser: argparse.ArgumentParser) -> None:
    """How the report is printed: the format, a plot, the progress bar."""
    parser.add_argument("-o", "--output", choices=FORMATS, default=None,
                        help="md (tables), csv or jsonl (one line per test), json (everything; "
                        "schema in weightfile/bench/report.py) (default: md)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="the same as -o json")
    parser.add_argument("--plot", metavar="PNG", default=None,
                        help="also draw tokens/s against the roofline per thread count "
                        "(needs the optional extra weightfile[plot], matplotlib)")  # fmt: skip
    add_force_argument(parser, "--plot PNG")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar (it is drawn on a terminal only, on stderr)",
    )


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    """How the run is made: synthetic models' cache, the image engine, the optional rows, CPUs,
    the bandwidth probe's buffer and an encrypted model's passphrase."""
    from weightfile.ref.user_cache import CACHE_WORDING

    parser.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help=f"where synthetic models live (default: synthetic/ of {CACHE_WORDING})",
    )
    # Qwen3-VL (issue 18 item 8): which engine encodes the bench image
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="fast",
        help="the engine that encodes the 448x448 bench image of a Qwen3-VL model (default fast; "
        "a family without a fast vision tower runs ref, and the report says so)",
    )
    parser.add_argument(
        "--profile", choices=profiles.names(), default=profiles.DEFAULT,
        help="numerics (weightfile/profiles.py); a profile other than canonical adds its fast "
        "rows beside the canonical ones in the same run: kestrel-board (dense Qwen3, Qwen3-MoE, "
        "Qwen3-VL VQF files) its pp/tg tests and, on a Qwen3-VL file, its vision tower's encode "
        "of the same image, with board ÷ canonical ratios per thread count",
    )  # fmt: skip
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child process")
    parser.add_argument("--no-ref", action="store_true", help="skip the reference engine's row")
    parser.add_argument(
        "--cpus", metavar="LIST", default=None,
        help="pin the run to these CPUs (0,2-3, as taskset -c); threads then default to their "
        "count (default: the big cores of a big.LITTLE machine, else no pinning)",
    )  # fmt: skip
    parser.add_argument("--bandwidth-mib", type=positive_int, default=256, metavar="MIB",
                        help="buffer read by the bandwidth probe, at most half the RAM "
                        "(default 256 MiB)")  # fmt: skip
    add_passphrase_argument(parser)


def output_format(args: argparse.Namespace) -> str:
    if args.json and args.output not in (None, "json"):
        raise UsageError(f"--json is -o json; it cannot be combined with -o {args.output}")
    return "json" if args.json else args.output or "md"


def depth_list(args: argparse.Namespace) -> list[int]:
    """-d values in the order given, repeats dropped (default [0])."""
    return unique(args.n_depth or [0])


def test_lists(args: argparse.Namespace) -> tuple[list[int], list[int]]:
    """(-p values, -n values) without zeros; --tokens N stands for -p N -n N."""
    if args.tokens is not None and (args.n_prompt is not None or args.n_gen is not None):
        raise UsageError("--tokens N is -p N -n N; give either --tokens or -p/-n")
    tokens = [args.tokens] if args.tokens is not None else None
    prompts = tokens or args.n_prompt or [512]
    gens = tokens or args.n_gen or [128]
    prompts, gens = unique([p for p in prompts if p]), unique([n for n in gens if n])
    if not prompts and not gens:
        raise UsageError("-p and -n are both 0: no test to run")
    return prompts, gens


def check_bandwidth_buffer(mib: int) -> None:
    """--bandwidth-mib within half this machine's memory: the probe touches the whole buffer, so
    more would swap or fail inside NumPy's allocator."""
    limit = physical_memory() // 2 >> 20
    if limit and mib > limit:
        raise UsageError(
            f"--bandwidth-mib {mib}: the probe's buffer must fit in half of this machine's "
            f"memory, at most {limit} MiB"
        )


def physical_memory() -> int:
    """Bytes of RAM, or 0 where the OS does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


NINFER_CONTEXT = "max_position_embeddings"


def context_of(path: Any) -> tuple[int, str]:
    """(the model's context in tokens, the field that says it): a VQF's arch max_seq_len
    (spec/vqf.md §arch-semantics), a `.ninfer` model's max_position_embeddings (spec/ninfer3.md
    §qwen35-config); 0 when unknown or when the file cannot be opened (left to the bench, which
    reports why)."""
    from weightfile.spec.errors import WeightfileError

    try:
        if str(path).endswith(".ninfer"):
            from weightfile.ref.ninfer3.read import open_artifact
            from weightfile.ref.qwen35.bind import bind_config

            with open_artifact(path) as nf:
                return int(bind_config(nf).max_position_embeddings or 0), NINFER_CONTEXT
        from weightfile.ref.vqf.read import open_vqf

        with open_vqf(path) as vqf:  # header and directory only: no passphrase needed
            return int(vqf.header.arch.get("max_seq_len") or 0), "max_seq_len"
    except (OSError, WeightfileError):
        return 0, ""


def check_lengths(
    path: Any, prompts: list[int], gens: list[int], depths: Sequence[int] = (0,)
) -> None:
    """-p and -n within the model's context: a test at depth D starts from a cache holding D
    tokens, so N tokens need D + N positions."""
    limit, field = context_of(path)
    if not limit:
        return
    for option, values in (("-p/--n-prompt", prompts), ("-n/--n-gen", gens)):
        if values and max(values) > limit:
            raise UsageError(
                f"{option} {max(values)}: the model's context is {limit} tokens ({field})"
            )
    deepest, longest = max(depths, default=0), max([*prompts, *gens], default=0)
    if deepest + longest > limit:
        raise UsageError(
            f"-d/--n-depth {deepest}: with the {longest}-token test it needs {deepest + longest} "
            f"positions, but the model's context is {limit} tokens ({field})"
        )


def unique(values: Sequence[int]) -> list[int]:
    return list(dict.fromkeys(values))


def render(report: dict[str, Any], fmt: str) -> str:
    from weightfile.bench.report import SCHEMA
    from weightfile.bench.table import format_csv, format_jsonl, format_md

    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt == "jsonl":
        return format_jsonl(report, SCHEMA)
    return format_csv(report) if fmt == "csv" else format_md(report)


def run_mtp(args: argparse.Namespace) -> int:
    """`bench --mtp K`: the MTP table (weightfile/bench/mtp.py); -n the generated tokens
    (default 64), -t the threads (default 1), -r the timed runs."""
    from weightfile.bench.mtp import mtp_report, render

    k = args.mtp
    if k > 5:
        raise UsageError(f"--mtp takes 1 to 5 drafts, not {k}")
    if any(depth_list(args)):
        raise UsageError("-d/--n-depth applies to the pp/tg tests, not to --mtp")
    n_gen = (args.n_gen or [args.tokens or 64])[0]
    threads = (args.threads or [1])[0]
    rows = mtp_report(k, max(n_gen, 2), threads, args.repetitions, args.cache_dir)
    print(render(rows))
    return 0


def model_path(args: argparse.Namespace) -> Path:
    """MODEL, or the `--synthetic` model (generated once into the cache folder)."""
    from weightfile.bench.synthetic import synthetic_model

    if args.synthetic is None:
        return Path(args.model)
    start = time.perf_counter()
    path, built = synthetic_model(args.synthetic, args.cache_dir, progress=not args.quiet)
    if built and not args.quiet:
        print(f"generated {path} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return Path(path)


def is_ninfer(args: argparse.Namespace, path: Any) -> bool:
    """True for a Qwen3.5 / 3.6 `.ninfer` file (weightfile/bench/ninfer.py), after the options
    such a file refuses: --passphrase-file, and a --profile none of whose families comes in it
    (the profile's typed refusal)."""
    if not str(path).endswith(".ninfer"):
        return False
    if args.passphrase_file is not None:
        raise UsageError("a .ninfer file is not encrypted: --passphrase-file applies to VQF")
    profiles.profile_named(args.profile).require_container("ninfer")
    return True


def run(args: argparse.Namespace) -> int:
    from weightfile.bench.plot import plot_report, require_matplotlib
    from weightfile.bench.report import Plan, run_bench

    if args.mtp is not None:
        return run_mtp(args)
    fmt = output_format(args)
    prompts, gens = test_lists(args)
    depths = depth_list(args)
    check_bandwidth_buffer(args.bandwidth_mib)  # before any allocation, and before generating
    if args.plot is not None and (missing := require_matplotlib()) is not None:
        print(f"weightfile bench: {missing}", file=sys.stderr)
        return EXIT_UNVERIFIABLE
    if args.plot is not None:  # a missing folder or an existing file: said before the work
        check_destination(Path(args.plot), args.force)
    path = model_path(args)
    check_lengths(path, prompts, gens, depths)
    from weightfile import cpus as cpu_sets
    from weightfile.bench.ninfer import run_ninfer_bench

    pinned = cpu_sets.apply(args.cpus)  # before any thread starts (spec/numerics.md §threads)
    if args.threads is None and args.cpus is not None:
        threads = [len(pinned or [])]
    else:
        threads = unique(args.threads or sorted({1, len(pinned or []) or os.cpu_count() or 1}))
    report = (
        run_ninfer_bench(
            path,
            plan=Plan(threads, prompts, gens, args.repetitions, depths),
            synthetic=args.synthetic,
            rss=not args.no_rss,
            ref=not args.no_ref,
            bandwidth_buffer=args.bandwidth_mib << 20,
            progress=not args.quiet,
        )
        if is_ninfer(args, path)
        else run_bench(
            path,
            plan=Plan(threads, prompts, gens, args.repetitions, depths),
            synthetic=args.synthetic,
            rss=not args.no_rss,
            ref=not args.no_ref,
            bandwidth_buffer=args.bandwidth_mib << 20,
            passphrase=passphrase(args),
            progress=not args.quiet,
            image_backend=backend_named(args.engine),
            profile=args.profile,
        )
    )
    report["machine"]["pinned_cpus"] = None if pinned is None else cpu_sets.fmt(pinned)
    print(render(report, fmt))
    if args.plot is not None:
        plot_report(report, args.plot, args.force)
    return 0
