"""Arguments several commands share, the exit-code table and the option validators.

Exit codes (the same for every command; README, "Command line"):
0 valid / done, 1 rule violations found, 2 usage error, 3 unverifiable (missing key, unsupported
feature), 4 cannot read or write (I/O), 130 interrupted. `exit_code` maps each of our errors onto
the table: a name the user asked for that does not exist (a tensor, a binding, a `--synthetic`
model) and a destination that exists without `--force` are usage errors (2), since a different
argument fixes them; a missing input file (a checkpoint's config.json, a tokenizer) is 4, as a
missing FILE is; a file missing what its model needs is a violation (1).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TextIO

from weightfile.spec.errors import (
    DestinationExistsError,
    NotFoundError,
    UnsupportedError,
    WeightfileError,
)

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_USAGE = 2
EXIT_UNVERIFIABLE = 3
EXIT_IO = 4
EXIT_INTERRUPTED = 130


#: NotFoundError rules raised for a name the user typed (not for a file's missing contents).
_ASKED_FOR_RULES = frozenset({"ninfer3.binder.parameter"})


def exit_code(exc: WeightfileError) -> int:
    """The exit status of one of our errors, by the table in the module docstring."""
    from weightfile.spec.rules import lookup

    if isinstance(exc, UnsupportedError):
        return EXIT_UNVERIFIABLE
    if isinstance(exc, DestinationExistsError):
        return EXIT_USAGE
    if isinstance(exc, NotFoundError):
        rule = lookup(exc.rule)
        if exc.rule.endswith(".missing_file") or exc.rule == "frontend.tokenizer.missing":
            return EXIT_IO
        if exc.rule in _ASKED_FOR_RULES or (rule is not None and rule.origin in ("reader", "cli")):
            return EXIT_USAGE
    return EXIT_VIOLATIONS


def error_message(exc: WeightfileError) -> str:
    """`Class: [rule] detail (...)`, with the API's `overwrite=True` hint in the CLI's words."""
    text = str(exc).replace("pass overwrite=True", "pass --force")
    return f"{type(exc).__name__}: {text}"


class UsageError(Exception):
    """A bad combination of arguments found after parsing; `main` prints it and exits 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is ONE line on stderr (exit 2), naming where --help is, and
    an option this command does not have is reported as such, with the closest one, before
    argparse would call a required option missing (`--promt hi`: "unrecognized option --promt;
    did you mean --prompt?", not "one of --prompt --token-ids is required")."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        args = sys.argv[1:] if args is None else list(args)
        if self._subparsers is None:  # a leaf command: the options are all known here
            self._refuse_unknown_options(args)
        return super().parse_known_args(args, namespace)

    def _refuse_unknown_options(self, args: list[str]) -> None:
        import difflib

        known = self._option_string_actions
        for arg in args:
            if arg == "--":
                return
            name = arg.split("=", 1)[0]
            if not name.startswith("-") or name == "-" or name[1:2].isdigit():
                continue  # a value, stdin, or a negative number
            if name in known or (not name.startswith("--") and name[:2] in known):
                continue  # -p8 is -p 8
            if name.startswith("--") and any(o.startswith(name) for o in known):
                continue  # an abbreviation argparse resolves (or calls ambiguous)
            longs = [o for o in known if o.startswith("--")]
            close = difflib.get_close_matches(name, longs, 1, 0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            self.error(f"unrecognized option {name}{hint}")


# -- validators for numeric options (argparse `type=`; messages read like argparse's own) ---------
def positive_int(text: str) -> int:
    """An integer of at least 1 (--max-tokens, --threads, --tokens)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer of at least 0 (--seed: the sampler's generator takes no negative seed)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def temperature(text: str) -> float:
    """A finite float of at least 0; 0 is greedy decoding (spec/numerics.md §next-token)."""
    return non_negative(text)


def non_negative(text: str) -> float:
    """An option's finite float of at least 0 (a usage error otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, got {text!r}")
    return value


def token_ids(text: str) -> str:
    """Comma-separated non-negative ids, at least one, no empty place (`1,,2` is a typo, not
    [1, 2]); kept as text for `prompt_ids`."""
    parts = text.replace(" ", "").split(",")  # as parse_token_ids reads it
    if any(not (p.isascii() and p.isdigit()) for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected non-negative ids separated by commas (1,2,3), got {text!r}"
        )
    return text


def utf8_text(text: str) -> str:
    """Text that is UTF-8 (--prompt): a byte the command line could not decode arrives as a lone
    surrogate (Python's surrogateescape), which no tokenizer takes; named here, as a usage
    error, instead of a TypeError from inside the tokenizer."""
    bad = next((i for i, ch in enumerate(text) if "\udc80" <= ch <= "\udcff"), None)
    if bad is None and not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    where = "" if bad is None else f": byte 0x{ord(text[bad]) - 0xDC00:02x} at character {bad}"
    raise argparse.ArgumentTypeError(
        f"not UTF-8 text{where} (use a UTF-8 terminal or locale, or pass --token-ids)"
    )


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


#: `--out -`: the output goes to standard output instead of a file (docs/commands.md).
STDOUT = "-"


def is_stdout(path: Path | str) -> bool:
    return str(path) == STDOUT


def check_destination(path: Path, force: bool) -> None:
    """Refuse `path` before the work, by the one output policy (ref/staging.py `check_output`,
    spec/ninfer3.md §safe-files): an existing file without --force (exit 2), a symlink, directory,
    FIFO or device whatever --force says (`format.file.destination`, exit 4), a missing folder.
    `-` (standard output) is always fine."""
    from weightfile.ref.staging import check_output

    if not is_stdout(path):
        check_output(path, force)


@contextlib.contextmanager
def output_stream(path: Path, force: bool) -> Iterator[BinaryIO]:
    """Where a command writes one output: for `-`, a buffer copied to standard output once the
    block succeeds (so a failure writes nothing there either); else the staged file of the output
    policy (ref/staging.py `staged`), published by rename."""
    from weightfile.ref.staging import staged

    if is_stdout(path):
        buffer = io.BytesIO()
        yield buffer
        sys.stdout.buffer.write(buffer.getvalue())
        sys.stdout.buffer.flush()
        return
    with staged(path, force) as out:
        yield out


def report_stream(path: Path | str) -> TextIO:
    """Where a command's one-line summary goes: stderr when its output is standard output."""
    return sys.stderr if is_stdout(path) else sys.stdout


def add_force_argument(parser: argparse.ArgumentParser, what: str = "OUT") -> None:
    parser.add_argument(
        "--force", action="store_true", help=f"replace an existing {what} (a regular file only)"
    )


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", type=Path, help="a .vqf or .ninfer file")
    parser.add_argument(
        "--example",
        action="store_true",
        help="use the bundled example file (a tiny Qwen3-shaped VQF)",
    )


def resolve_file(parser_name: str, args: argparse.Namespace) -> Path:
    from weightfile.examples import EXAMPLE_PATH

    if args.example == (args.file is not None):
        raise UsageError("give exactly one of FILE or --example")
    return EXAMPLE_PATH if args.example else args.file


# -- keys of protected VQF files (spec/vqf.md §protected) ------------------------------------------
def add_passphrase_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--passphrase-file",
        type=Path,
        metavar="PATH",
        help="the passphrase of an encrypted VQF (its bytes, one trailing newline dropped); "
        "default: the environment variable VLLM_VQF_KEY, as the engine reads it",
    )


def passphrase(args: argparse.Namespace) -> bytes | None:
    """--passphrase-file, else VLLM_VQF_KEY; None when neither gives a non-empty passphrase.

    A file's final line break is not part of the passphrase (editors add one); the environment
    variable is taken byte for byte, as the engine does (spec/vqf.md §key-derivation).
    """
    import os

    path = getattr(args, "passphrase_file", None)
    if path is not None:
        raw = Path(path).read_bytes()
        raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
        return raw or None
    return os.environb.get(b"VLLM_VQF_KEY") or None


def add_sign_pub_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sign-pub",
        metavar="HEX|@FILE",
        help="the trusted SM2 public key (128 hex characters, or @FILE holding them); "
        "default: the environment variable VLLM_VQF_SIGN_PUB",
    )


def trusted_pub(command: str, args: argparse.Namespace) -> bytes | None:
    """--sign-pub HEX|@FILE, else VLLM_VQF_SIGN_PUB; None when neither is given."""
    import os

    from weightfile.ref.vqf.protect import parse_public_key

    text = getattr(args, "sign_pub", None) or os.environ.get("VLLM_VQF_SIGN_PUB")
    if not text:
        return None
    if text.startswith("@"):
        text = Path(text[1:]).read_text(encoding="ascii", errors="replace")
    try:
        return parse_public_key(text)
    except ValueError as exc:
        raise UsageError(f"--sign-pub: {exc}") from None
