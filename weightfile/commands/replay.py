"""`weightfile replay MODEL DUMP [--profile P]`: recompute every operation whose input is in an
engine dump from the dump's own input and say, op by op, equal or different (spec/numerics.md
§replay).

The operations are the rows of weightfile/replay.py (the board's Q8 MoE FFN and every step of
the board vision tower, per block and per merger). Per op: each output array compared bit for
bit with `diff`'s figures (max |delta|, ulps, sign changes, the first differing element); ops
the dump records but that cannot be replayed (an input missing, another profile or family) and
arrays no op replays are listed. Exit 0 when every replayed op is
equal (and at least one was replayed), 1 otherwise, 3 when the profile cannot run the file, 4
when the dump cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from weightfile import profiles
from weightfile.backends import ENGINES
from weightfile.spec.errors import WeightfileError

from ._common import EXIT_IO, EXIT_OK, EXIT_VIOLATIONS, error_message, exit_code, positive_int
from .diff import array_line


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "replay",
        help="recompute each op of an engine dump from the dump's own inputs; equal or not",
        description=(
            "Recompute every operation whose input is in DUMP from that input (not from our "
            "own upstream values) and compare each output with the dump's, bit for bit, with "
            "diff's figures, so a wrong op shows whatever drift came before it. Ops it cannot "
            "replay and arrays no op replays are listed. Exit 0 when every replayed op is "
            "equal, 1 otherwise (or when nothing could be replayed), 3 when the profile cannot "
            "run MODEL, 4 when DUMP cannot be read."
        ),
    )
    parser.add_argument("model", metavar="MODEL", type=Path, help="the model file the dump ran")
    parser.add_argument("dump", metavar="DUMP", type=Path, help="the engine's dump (.npz)")
    parser.add_argument(
        "--profile", choices=profiles.names(), default=profiles.DEFAULT,
        help="numerics the ops are recomputed with (the board's dumps: kestrel-board)",
    )  # fmt: skip
    parser.add_argument(
        "--engine", choices=ENGINES, default="fast",
        help="fast: the C kernels; ref: the readable reference (the same bits)",
    )  # fmt: skip
    parser.add_argument(
        "--threads", type=positive_int, default=1, help="threads of the fast engine (default 1)"
    )
    parser.add_argument(
        "--json", action="store_true", help='one JSON document ("schema": "weightfile.replay/1")'
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.backends import backend_named
    from weightfile.dumps.read import open_dump
    from weightfile.frontend.dispatch import load_session
    from weightfile.replay import replay

    try:
        dump = open_dump(args.dump)  # an unreadable dump is exit 4, before the model is bound
    except WeightfileError as exc:
        print(f"weightfile replay: {error_message(exc)}", file=sys.stderr)
        return EXIT_IO
    try:
        engine = backend_named(args.engine)
        s = load_session(args.model, None, False, engine, args.threads, None, args.profile)
        try:
            report = replay(dump, s.model, args.profile, s.family)
        finally:
            if s.source is not None:
                s.source.close()
    except WeightfileError as exc:
        print(f"weightfile replay: {error_message(exc)}", file=sys.stderr)
        reading = exc.rule.split(".")[:2] == ["frontend", "dump"]  # a dump member read late
        return EXIT_IO if reading else exit_code(exc)
    finally:
        dump.close()
    if args.json:
        print(json.dumps(as_json(report), indent=1, allow_nan=False))
    else:
        print_report(report)
    return EXIT_OK if report.equal else EXIT_VIOLATIONS


def print_report(r: Any) -> None:
    """One block per op (its verdict, then one line per differing array), the lists, the
    verdict."""
    for o in r.ops:
        if o.skipped:
            print(f"op {o.op.name}: not replayed ({o.skipped})")
            continue
        same = sum(d.ok for d in o.arrays)
        verdict = "equal" if o.equal else "different"
        print(f"op {o.op.name}: {verdict} ({same} of {len(o.arrays)} outputs bit-identical)")
        if not o.equal:
            print("  (figures: our recomputation against the dump)")
        for d in o.arrays:
            if not d.ok:
                print("  " + array_line(d))
        if o.missing:
            print(f"  computed, not in the dump: {', '.join(o.missing)}")
    if r.unreplayable:
        more = f" ... and {len(r.unreplayable) - 12} more" if len(r.unreplayable) > 12 else ""
        print(f"{len(r.unreplayable)} arrays no op replays: {', '.join(r.unreplayable[:12])}{more}")
    if not r.replayed:
        print("no op could be replayed")
    print(f"result: {'equal' if r.equal else 'different'}")


def as_json(r: Any) -> dict:
    """The document of `replay --json` (schema weightfile.replay/1)."""
    from weightfile.dumps.report import _array_json
    from weightfile.replay import SCHEMA

    ops = [
        {
            "op": o.op.name, "inputs": list(o.op.inputs),
            "result": "not replayed" if o.skipped else ("equal" if o.equal else "different"),
            "why_not": o.skipped or None, "arrays": [_array_json(d) for d in o.arrays],
            "not_in_dump": o.missing,
        }
        for o in r.ops
    ]  # fmt: skip
    return {
        "schema": SCHEMA, "result": "equal" if r.equal else "different", "ops": ops,
        "unreplayable": r.unreplayable,
    }  # fmt: skip
