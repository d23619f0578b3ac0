"""`weightfile diff A B`: compare two dumps array by array, every token, bit for bit.

A and B may each be an `.npy` (`dump`), an `.npz` (a board dump, `run --save-logits`, `trace`,
`dump --words`) or a safetensors file (`dump --all`), read by weightfile/dumps/read.py without
trusting their headers. Two traces are compared name by name over every token, the vision tower
included; a trace against a board dump is read in the board's names and what cannot be mapped is
listed (weightfile/dumps/names.py). Per array: max |Δ|, the largest distance in ulps on the
ordered float line among same-sign elements, sign changes on their own, and the first differing
element with both bit patterns; then the first operation, in forward-pass order, where the two
diverge (spec/numerics.md §dump-diff). Exit 0 equal, 1 different (an array in one file only
counts unless --common-only), 2 usage, 4 an input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from weightfile.spec.errors import WeightfileError

from ._common import EXIT_IO, EXIT_OK, EXIT_VIOLATIONS, error_message, non_negative


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diff",
        help="compare two dumps (.npy, .npz, safetensors; board dump, trace) bit for bit",
        description=(
            "Compare every array and every token of two dumps: max |delta|, ulps on the ordered "
            "float line (sign changes counted apart), the first differing element, and the first "
            "operation and layer where they diverge. A trace held against a board dump is read "
            "in the board's names (the last prompt token), and what cannot be mapped is listed. "
            "Exit 0 equal, 1 different (an array in one file only counts, unless --common-only), "
            "2 usage, 4 an input cannot be read."
        ),
    )
    parser.add_argument(
        "a", metavar="A", type=Path, help="the first dump (.npy, .npz or .safetensors)"
    )
    parser.add_argument("b", metavar="B", type=Path, help="the second dump")
    parser.add_argument(
        "--atol",
        metavar="X",
        type=_tolerance,
        help="an element matches when |a-b| <= atol + rtol*|b|",
    )
    parser.add_argument(
        "--rtol", metavar="X", type=_tolerance, help="relative tolerance (see --atol)"
    )
    parser.add_argument(
        "--max-ulps",
        metavar="N",
        type=_ulps,
        help="an element also matches when a and b are at most this many floats apart",
    )
    parser.add_argument(
        "--common-only",
        action="store_true",
        help="judge only the arrays both files hold (those in one file only are still listed)",
    )
    parser.add_argument(
        "--json", action="store_true", help='one JSON document ("schema": "weightfile.diff/1")'
    )
    parser.set_defaults(run=run)


def _tolerance(text: str) -> float:
    return non_negative(text)


def _ulps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from weightfile.dumps.compare import Tolerance
    from weightfile.dumps.read import open_dump
    from weightfile.dumps.report import diff_dumps

    tolerance = Tolerance(args.atol, args.rtol, args.max_ulps)
    try:
        with ExitStack() as stack:
            a = stack.enter_context(open_dump(args.a))
            b = stack.enter_context(open_dump(args.b))
            report = diff_dumps(a, b, tolerance, args.common_only)
            if args.json:
                print(json.dumps(report.as_json(), indent=1, allow_nan=False))
            else:
                print_report(report)
    except WeightfileError as exc:  # an input that cannot be read is exit 4, never "different"
        print(f"weightfile diff: {error_message(exc)}", file=sys.stderr)
        return EXIT_IO
    return EXIT_OK if report.equal else EXIT_VIOLATIONS


def print_report(r: Any) -> None:
    """The text form: notes, one-sided arrays, one line per differing array, the verdict."""
    if r.naming:
        print(f"naming: {r.naming}")
    for note in r.notes:
        print(f"note: {note}")
    for side, only in (("A", r.only_a), ("B", r.only_b)):
        groups: dict[str, list[str]] = {}
        for n, why in only:
            groups.setdefault(why, []).append(n)
        for why, names in groups.items():
            more = f" ... and {len(names) - 12} more" if len(names) > 12 else ""
            print(f"{len(names)} arrays in {side} only ({why}): {', '.join(names[:12])}{more}")
    for d in r.arrays:
        if d.status != "identical":
            print(array_line(d))
    if r.first_divergence:
        print(f"first divergence: {r.first_divergence}")
    identical = sum(d.status == "identical" for d in r.arrays)
    within = sum(d.status == "within" for d in r.arrays)
    tail = f", {within} more within tolerance" if within else ""
    if not r.arrays:
        print("no arrays in common")
    else:
        print(f"{identical} of {len(r.arrays)} common arrays bit-identical{tail}")
    verdict = "equal" if r.equal else "different"
    if r.common_only and (r.only_a or r.only_b):
        verdict += " (--common-only: the arrays in one file only were not judged)"
    print(f"result: {verdict}")


def array_line(d: Any) -> str:
    """One differing array: counts, |Δ|, ulps, sign changes, the first differing element."""
    name = f"{d.name} [{d.source}]" if d.source else d.name
    if not d.count and d.note:
        return f"{name}: {d.note}"
    parts = [f"{d.differ} of {d.count} differ"]
    if d.note:
        parts.insert(0, d.note)
    if d.status == "within":
        parts.append("all within tolerance")
    elif d.beyond != d.differ:
        parts.append(f"{d.beyond} beyond tolerance")
    parts.append(f"max |delta| {d.max_abs:.6g}")
    if "a_bits" in d.first:
        parts.append(f"max {d.max_ulps} ulps")
        if d.sign_changes:
            parts.append(f"{d.sign_changes} sign changes (up to {d.sign_change_ulps} ulps apart)")
        if d.nan_mismatch:
            parts.append(f"{d.nan_mismatch} NaN against a number")
    f = d.first
    where = ",".join(map(str, f["index"]))
    first = f"first [{where}]: {_num(f['a'])}"
    if "a_bits" in f:
        first = f"first [{where}]: {_num(f['a'])} ({f['a_bits']}) vs {_num(f['b'])} ({f['b_bits']})"
    else:
        first += f" vs {_num(f['b'])}"
    return f"{name}: {', '.join(parts)}; {first}"


def _num(x: Any) -> str:
    return f"{x:.9g}" if isinstance(x, float) else str(x)
