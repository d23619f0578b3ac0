"""The `weightfile` command line: one subcommand per module in `weightfile.commands`.

Each command module exposes `register(subparsers)`, which adds its parser and sets `run`, a
function taking the parsed arguments and returning the exit status. Every command shares one
exit-code table (`weightfile.commands._common`, README "Command line"): 0 valid / done, 1 rule
violations found (the message names the rule, the path and the byte offset), 2 usage error,
3 unverifiable (missing key, unsupported feature), 4 cannot read or write, 130 interrupted.
A user's mistake is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from weightfile.commands._common import (
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_UNVERIFIABLE,
    EXIT_USAGE,
    EXIT_VIOLATIONS,
    Parser,
    UsageError,
)
from weightfile.spec.errors import UnsupportedError, WeightfileError

#: Subcommand modules, in the order `weightfile --help` lists them.
COMMAND_MODULES = (
    "weightfile.commands.demo",
    "weightfile.commands.inspect",
    "weightfile.commands.verify",
    "weightfile.commands.dump",
    "weightfile.commands.run",
    "weightfile.commands.trace",
    "weightfile.commands.import_hf",
    "weightfile.commands.convert",
    "weightfile.commands.protect",
    "weightfile.commands.conformance",
    "weightfile.commands.bench",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    name = f"weightfile {args.command}"
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WeightfileError as exc:
        print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNVERIFIABLE if isinstance(exc, UnsupportedError) else EXIT_VIOLATIONS
    except BrokenPipeError:  # `weightfile inspect big.vqf | head` is not an error
        return 0
    except OSError as exc:  # a directory, a missing or unreadable file: name the path
        print(f"{name}: {_os_error(exc)}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _os_error(exc: OSError) -> str:
    """`path: reason` (no `[Errno 21]`), or the message when the error names no file."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"weightfile {version('weightfile')}"
    except PackageNotFoundError:
        return "weightfile (not installed)"


if __name__ == "__main__":
    sys.exit(main())
