"""`weightfile inspect FILE [--json]`: header, arch, flags by name and the directory."""

from __future__ import annotations

import argparse
import json
from typing import Any

from weightfile.formats import sniff

from ._common import add_file_argument, add_passphrase_argument, passphrase, resolve_file


def register(sub: Any) -> None:
    parser = sub.add_parser("inspect", help="show a file's header, architecture and directory")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for tools")
    add_passphrase_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = resolve_file("inspect", args)
    kind = sniff(path)
    if kind == "vqf":
        from weightfile.ref.vqf.describe import describe, format_text
        from weightfile.ref.vqf.read import open_vqf

        with open_vqf(path) as vqf:
            description = describe(vqf, passphrase=passphrase(args))
    else:
        from weightfile.ref.ninfer3.describe import describe, format_text

        description = describe(path)
    print(json.dumps(description, indent=2) if args.json else format_text(description))
    if kind == "vqf" and not args.json:
        print(f"engine: {engine_defaults_line(path)}")
    return 0


def engine_defaults_line(path: Any) -> str:
    """Would a default board engine load it (spec/vqf.md §9.2), as one line."""
    from weightfile.ref.vqf.engine_load import engine_load_file
    from weightfile.ref.vqf.read import open_vqf

    with open_vqf(path) as vqf:
        return engine_load_file(vqf).summary()
