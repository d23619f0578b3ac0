"""Arguments several commands share."""

from __future__ import annotations

import argparse
from pathlib import Path


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
        raise SystemExit(f"weightfile {parser_name}: give exactly one of FILE or --example")
    return EXAMPLE_PATH if args.example else args.file


# -- keys of protected VQF files (spec/vqf.md §4) -------------------------------------------------
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
    variable is taken byte for byte, as the engine does (spec/vqf.md §4.1).
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
        raise SystemExit(f"weightfile {command}: --sign-pub: {exc}") from None
