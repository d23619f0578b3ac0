"""`weightfile import HF_DIR OUT [options]`: an alias of `weightfile convert`
(commands/convert.py, spec/vqf.md §converter) with the same options, spelling for spelling.

--qtype names the weight mode as --wmode does: q8_0 is --wmode q8, q4_0 --wmode q4, f32 and f16
the reference-precision files. The default layout is tiled, the one a default engine loads.
--encrypt takes the passphrase as `weightfile encrypt` does (--passphrase-file, else
VLLM_VQF_KEY); --sign-key reads a `weightfile keygen` key file. Both are checked before the
checkpoint is converted, and only the protected file is published (spec/vqf.md §protected).
An OUT ending in `.ninfer` imports a Qwen3.5 checkpoint instead, with --format.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .convert import WMODE_OF_QTYPE, add_conversion_arguments, resolve_wmode, run_conversion

__all__ = ["WMODE_OF_QTYPE", "register", "run"]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "import",
        help="convert a Hugging Face Qwen3 checkpoint folder to VQF (Qwen3.5 to .ninfer); "
        "an alias of convert",
        description=(
            "Convert a Hugging Face Qwen3 checkpoint folder (config.json, *.safetensors, "
            "tokenizer.json) to a VQF file. The tokenizer is copied to OUT.vqf.tokenizer.json. "
            "f32/f16 are reference-precision files (projections unquantized, for diffing "
            "against transformers); the engine reads q8_0/q4_0 files. An OUT ending in "
            ".ninfer converts a Qwen3.5 checkpoint to .ninfer v3 instead, with --format. "
            "The same command as `weightfile convert`, with the same options: --qtype q8_0 "
            "is --wmode q8, --qtype q4_0 is --wmode q4."
        ),
    )
    parser.add_argument("folder", type=Path, help="the checkpoint folder")
    parser.add_argument("out", type=Path, help="the .vqf (or .ninfer) file to write")
    add_conversion_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_conversion("import", args.folder, args.out, args, resolve_wmode(args))
