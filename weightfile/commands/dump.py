"""`weightfile dump FILE NAME --out OUT.npy [--words] [--engine ref|fast]`: one tensor as NumPy.

Values are float32 in the logical shape (C order; tiled and interleaved layouts come out in plain
row-major order). With --words the logical codes and scales go to an .npz instead, so an engine
team can diff a single tensor against its own decoder.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ._common import add_passphrase_argument, passphrase


def register(sub: Any) -> None:
    parser = sub.add_parser("dump", help="write one tensor's values (or words) as .npy / .npz")
    parser.add_argument("file", type=Path, help="a .vqf or .ninfer file")
    parser.add_argument("name", help="VQF tensor name, or .ninfer object id / binding name")
    parser.add_argument("--out", type=Path, required=True, help="OUT.npy (values) or OUT.npz")
    parser.add_argument("--words", action="store_true", help="logical codes and scales (.npz)")
    parser.add_argument("--engine", choices=("ref", "fast"), default="fast")
    parser.add_argument(
        "--q8-tiling",
        choices=("4x4",),
        help="VQF: the q8 tensors are 4x4-tiled (such files set no flag, vqf.md §0 item 3)",
    )
    add_passphrase_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.model_file import open_model_file

    options: dict[str, Any] = {"q8_tiling": args.q8_tiling} if args.q8_tiling else {}
    key = passphrase(args)
    if key is not None:
        options["passphrase"] = key
    with open_model_file(args.file, **options) as f:
        if args.words:
            words = f.decode_words(args.name, engine=args.engine)
            np.savez(args.out, **words)
            summary = ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in words.items())
        else:
            values = f.decode(args.name, engine=args.engine)
            np.save(args.out, values)
            summary = f"{values.dtype}{list(values.shape)}"
    print(f"{args.name}: {summary} -> {args.out}")
    return 0
