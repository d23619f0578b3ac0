"""`weightfile conformance run|generate`: check an implementation against the conformance corpus.

    weightfile conformance run [--impl "COMMAND" | --builtin ref|fast] [--run GLOB]
                               [--timeout SECONDS] [--json]
    weightfile conformance generate [--check]
    weightfile conformance export DIR

`run` prints one PASS/FAIL/UNSUPPORTED/SKIP line per case and a summary `N passed, M failed, K
skipped[, U unsupported]` (a case of a kind the implementation does not declare is skipped; a
case it answers with exit 3 and `unsupported: why` is unsupported) after the implementation's
`notes` on stderr; exit 0 only when no case fails and at least one passes, 2 when --impl does
not answer `kinds` or --run matches no case. `generate` rewrites the committed corpus; with
--check it only compares a fresh generation with it and exits 1 on any drift. `export` writes
the corpus, its README, changelog, C adapter and SHA256SUMS into the new folder DIR
(conformance/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from weightfile.backends import ENGINES

from ._common import UsageError


def register(sub: Any) -> None:
    parser = sub.add_parser("conformance", help="run or regenerate the conformance corpus")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_p = actions.add_parser("run", help="run the corpus against an implementation")
    who = run_p.add_mutually_exclusive_group()
    who.add_argument(
        "--impl",
        metavar="COMMAND",
        help="a command; asked `kinds` once, then run with KIND PATH appended per case",
    )
    who.add_argument("--builtin", choices=ENGINES, default="ref", help="a built-in implementation")
    run_p.add_argument(
        "--run", dest="pattern", metavar="GLOB", default="*", help="only case ids matching GLOB"
    )
    run_p.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        default=None,
        help="fail a case that runs longer (default: 60 for --impl, none for --builtin)",
    )
    run_p.add_argument(
        "--json",
        action="store_true",
        help="print the results as one JSON document with a schema tag",
    )
    run_p.set_defaults(run=run)
    gen_p = actions.add_parser("generate", help="regenerate the corpus")
    gen_p.add_argument("--check", action="store_true", help="only report drift; write nothing")
    gen_p.set_defaults(run=generate)
    exp_p = actions.add_parser(
        "export", help="write the corpus with its README and SHA256SUMS into a new folder"
    )
    exp_p.add_argument("dir", metavar="DIR", help="the folder to create (must not exist)")
    exp_p.set_defaults(run=export)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from weightfile.conformance import generate as gen
    from weightfile.conformance import runner

    try:
        if args.impl:
            impl = runner.command_implementation(args.impl, args.timeout or runner.TIMEOUT_SECONDS)
        else:
            impl = runner.builtin_implementation(args.builtin, args.timeout)
    except ValueError as exc:  # an --impl that does not answer `kinds`: a usage error, on stderr
        raise UsageError(str(exc)) from None
    if not runner.case_ids(pattern=args.pattern):
        raise UsageError(
            f"no case id matches --run {args.pattern!r} (see conformance/corpus/files-*)"
        )
    for kind, note in sorted(impl.notes.items()):
        print(f"note: {kind}: {note}", file=sys.stderr)  # stdout stays one line per case
    from weightfile.progress import each

    def bar(ids: list[str]) -> Any:  # one step per case, on a terminal only
        return each(ids, "conformance", total=len(ids), unit="case")

    results = runner.run_corpus(impl, pattern=args.pattern, progress=bar)
    counts = runner.counts(results)
    if args.json:
        version = (gen.CORPUS_DIR / "VERSION").read_text().splitlines()
        print(json.dumps(runner.results_document(results, version), indent=2))
    else:
        for r in results:
            print(f"{r.verdict.upper()} {r.case}  {r.reason}")
        print(runner.summary(results))
    return 0 if counts["pass"] and counts["fail"] == 0 else 1


def generate(args: argparse.Namespace) -> int:
    from weightfile.conformance import generate as gen

    if args.check:
        problems = gen.drift()
        for p in problems:
            print(p)
        print("corpus drift" if problems else f"corpus up to date ({gen.CORPUS_DIR})")
        return 1 if problems else 0
    count = gen.write_corpus()
    print(f"wrote {count} files under {gen.CORPUS_DIR}")
    return 0


def export(args: argparse.Namespace) -> int:
    from weightfile.conformance.export import export_corpus

    count = export_corpus(args.dir)
    print(f"wrote {count} files under {args.dir} (check them with: sha256sum -c SHA256SUMS)")
    return 0
