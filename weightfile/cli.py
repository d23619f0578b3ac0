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
import textwrap
from collections.abc import Sequence

from weightfile.commands._common import (
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_USAGE,
    Parser,
    UsageError,
    error_message,
    exit_code,
)
from weightfile.spec.errors import FileAccessError, WeightfileError

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
    "weightfile.commands.diff",
    "weightfile.commands.replay",
)


#: One example per command, shown at the end of its --help (the commands need not know).
EXAMPLES = {
    "demo": 'weightfile demo --prompt "The weight file" --max-tokens 16',
    "inspect": "weightfile inspect model.vqf --json",
    "verify": "weightfile verify --checksum model.vqf",
    "dump": "weightfile dump model.vqf q4_q --out q4_q.npy",
    "run": 'weightfile run model.vqf --prompt "Hello" --max-tokens 32',
    "trace": "weightfile trace model.vqf --token-ids 1,2,3 --out trace.npz",
    "import": "weightfile import ./Qwen3-0.6B model.vqf --qtype q4_0 --layout tiled",
    "encrypt": "weightfile encrypt model.vqf model.enc.vqf --passphrase-file key.txt",
    "decrypt": "weightfile decrypt model.enc.vqf model.vqf --passphrase-file key.txt",
    "sign": "weightfile sign model.vqf model.signed.vqf --sign-key signer.key",
    "keygen": "weightfile keygen --out signer.key",
    "conformance": "weightfile conformance run --builtin fast",
    "conformance run": "weightfile conformance run --impl ./my-adapter --run 'vqf/v2/*'",
    "conformance generate": "weightfile conformance generate --check",
    "bench": "weightfile bench --synthetic qwen3-0.6b-q4_0 -p 64,512 -n 64 -t 1,2 -r 3 -o md",
    "convert": "weightfile convert ./Qwen3-0.6B model.vqf --wmode q4",
    "diff": "weightfile diff ours.npz board/engine.npz --common-only",
    "replay": "weightfile replay model.vqf board/engine.npz --profile kestrel-board",
}


#: The commands that can run long (a checksum over GB, a conversion, the corpus, a benchmark):
#: each accepts -q/--quiet, which turns the progress bar and the compile note off
#: (weightfile/progress.py). A command may declare it itself (bench does).
LONG_COMMANDS = ("verify", "dump", "import", "convert", "conformance run", "bench")


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each line of a description or epilog on its own; indented lines (examples) stay."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            indent + line
            if not line.strip() or line[0].isspace()
            else textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
            for line in text.splitlines()
        )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="weightfile",
        description="Inspect, verify and convert VQF and .ninfer v3 LLM weight files.",
        epilog="run 'weightfile COMMAND --help' for a command's options and an example",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _finish_help(sub, "")
    return parser


def _finish_help(sub: argparse._SubParsersAction, prefix: str) -> None:
    """Every subcommand's --help: its example (EXAMPLES) and each option's non-trivial default."""
    for command, p in sub.choices.items():
        key = f"{prefix}{command}"
        p.formatter_class = HelpFormatter
        if key in EXAMPLES and not p.epilog:
            p.epilog = f"example:\n  {EXAMPLES[key]}"
        if key in LONG_COMMANDS and "--quiet" not in p._option_string_actions:
            p.add_argument(
                "-q",
                "--quiet",
                action="store_true",
                help="no progress bar and no compile note (both drawn on a terminal only, "
                "on stderr)",
            )
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                _finish_help(action, f"{key} ")
            elif _shows_default(action):
                note = "default: %(default)s"
                action.help = f"{action.help} ({note})" if action.help else note


def _shows_default(action: argparse.Action) -> bool:
    """An option whose default says something: not None/False/SUPPRESS, not already stated."""
    default = action.default
    if not action.option_strings or action.help is argparse.SUPPRESS:
        return False
    if default is None or default is False or default is argparse.SUPPRESS:
        return False
    if isinstance(action, argparse._StoreConstAction | argparse._VersionAction):
        return False
    return "%(default)" not in (action.help or "") and "default" not in (action.help or "")


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(_version())  # before build_parser, which imports every command (NumPy and all)
        return 0
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        # `weightfile` alone: the help on stdout, exit 2 as for any missing argument
        parser.print_help()
        return EXIT_USAGE
    args = parser.parse_args(argv)
    from weightfile.progress import configure, install_compile_note

    configure(quiet=bool(getattr(args, "quiet", False)))
    install_compile_note()
    name = f"weightfile {args.command}"
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except FileAccessError as exc:  # ours, but an I/O failure: exit 4 like the OSError below
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_IO
    except WeightfileError as exc:
        print(f"{name}: {error_message(exc)}", file=sys.stderr)
        return exit_code(exc)
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
