"""`weightfile conformance run|generate`: check an implementation against the conformance corpus.

    weightfile conformance run [--impl "COMMAND" | --builtin ref|fast] [--run GLOB] [--json]
    weightfile conformance generate [--check]

`run` prints one PASS/FAIL/SKIP line per case and a summary `N passed, M failed, K skipped`
(a case of a kind the implementation does not declare is skipped) after the implementation's
`notes` on stderr; exit 0 only when no case fails and at least one passes, 2 when --impl does
not answer `kinds` or --run matches no case. `generate` rewrites the committed corpus; with
--check it only compares a fresh generation with it and exits 1 on any drift
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
    run_p.add_argument("--json", action="store_true", help="print the results as JSON")
    run_p.set_defaults(run=run)
    gen_p = actions.add_parser("generate", help="regenerate the corpus")
    gen_p.add_argument("--check", action="store_true", help="only report drift; write nothing")
    gen_p.set_defaults(run=generate)


def run(args: argparse.Namespace) -> int:
    from weightfile.conformance import runner

    try:
        if args.impl:
            impl = runner.command_implementation(args.impl)
        else:
            impl = runner.builtin_implementation(args.builtin)
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
    passed = sum(r.passed for r in results)
    skipped = sum(r.skipped for r in results)
    failed = len(results) - passed - skipped
    if args.json:
        rows = [
            {"case": r.case, "passed": r.passed, "skipped": r.skipped, "reason": r.reason}
            for r in results
        ]
        doc = {"results": rows, "passed": passed, "failed": failed, "skipped": skipped}
        print(json.dumps(doc, indent=2))
    else:
        for r in results:
            word = "SKIP" if r.skipped else "PASS" if r.passed else "FAIL"
            print(f"{word} {r.case}  {r.reason}")
        print(runner.summary(results))
    return 0 if passed and failed == 0 else 1


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
