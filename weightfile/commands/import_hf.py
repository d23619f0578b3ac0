"""`weightfile import HF_DIR OUT.vqf --qtype f32|f16|q8_0|q4_0 [--layout legacy|tiled]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "import",
        help="convert a Hugging Face Qwen3 checkpoint folder to VQF",
        description=(
            "Convert a Hugging Face Qwen3 checkpoint folder (config.json, *.safetensors, "
            "tokenizer.json) to a VQF file. The tokenizer is copied to OUT.vqf.tokenizer.json. "
            "f32/f16 are reference-precision files (projections unquantized, for diffing "
            "against transformers); the engine reads q8_0/q4_0 files."
        ),
    )
    parser.add_argument("folder", type=Path, help="the checkpoint folder")
    parser.add_argument("out", type=Path, help="the .vqf file to write")
    parser.add_argument("--qtype", choices=("f32", "f16", "q8_0", "q4_0"), default="q8_0")
    parser.add_argument(
        "--layout", choices=("legacy", "tiled"), default="legacy",
        help="tiled sets Q8_8X8|Q4_4X4 (vqf.md §2.5)",
    )  # fmt: skip
    parser.add_argument("--force", action="store_true", help="overwrite OUT")
    parser.add_argument(
        "--engine", choices=("ref", "fast"), default="fast", help="which codecs encode (same bytes)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.ref.vqf.import_hf import import_checkpoint, tokenizer_sidecar

    codecs = f"weightfile.{args.engine}.codecs.vqf"
    path = import_checkpoint(
        args.folder,
        args.out,
        qtype=args.qtype,
        layout=args.layout,
        overwrite=args.force,
        codecs=codecs,
    )
    note = f" (+ {tokenizer_sidecar(path).name})" if tokenizer_sidecar(path).exists() else ""
    print(f"{args.folder} -> {path} [{args.qtype}, {args.layout}]{note}")
    return 0
