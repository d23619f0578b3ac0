"""The `weightfile` command line: one subcommand per module in `weightfile.commands`.

Each command module exposes `register(subparsers)`, which adds its parser and sets `run`, a
function taking the parsed arguments and returning the exit status. Exit status: 0 success,
1 the input broke a rule (the message names the rule, the path and the byte offset), 2 usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from weightfile.spec.errors import WeightfileError

#: Subcommand modules, in the order `weightfile --help` lists them.
COMMAND_MODULES = (
    "weightfile.commands.demo",
    "weightfile.commands.inspect",
    "weightfile.commands.verify",
    "weightfile.commands.dump",
    "weightfile.commands.run",
    "weightfile.commands.trace",
    "weightfile.commands.import_hf",
    "weightfile.commands.protect",
    "weightfile.commands.conformance",
    "weightfile.commands.bench",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="weightfile",
        description="Inspect, verify and convert VQF and .ninfer v3 LLM weight files.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except WeightfileError as exc:
        print(f"weightfile {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"weightfile {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `weightfile inspect big.vqf | head` is not an error
        return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"weightfile {version('weightfile')}"
    except PackageNotFoundError:
        return "weightfile (not installed)"


if __name__ == "__main__":
    sys.exit(main())
