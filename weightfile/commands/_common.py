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
