"""`weightfile import HF_DIR OUT.vqf --qtype f32|f16|q8_0|q4_0 [--layout legacy|tiled]
[--encrypt] [--sign-key KEYFILE]`.

--encrypt takes the passphrase as `weightfile encrypt` does (--passphrase-file, else
VLLM_VQF_KEY); --sign-key reads a `weightfile keygen` key file. Both are checked before the
checkpoint is converted, and only the protected file is published (spec/vqf.md §4).

A Qwen3-MoE checkpoint (config.json's architectures or model_type) becomes a version-3 VQF
(weightfile/convert/qwen3_moe_vqf.py). An OUT ending in `.ninfer` imports a Qwen3.5 checkpoint
instead (commands/import_ninfer.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import add_passphrase_argument
from .import_ninfer import FORMATS as NINFER_FORMATS
from .import_ninfer import run as run_ninfer
from .import_ninfer import wants_ninfer


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "import",
        help="convert a Hugging Face Qwen3 checkpoint folder to VQF (Qwen3.5 to .ninfer)",
        description=(
            "Convert a Hugging Face Qwen3 checkpoint folder (config.json, *.safetensors, "
            "tokenizer.json) to a VQF file. The tokenizer is copied to OUT.vqf.tokenizer.json. "
            "f32/f16 are reference-precision files (projections unquantized, for diffing "
            "against transformers); the engine reads q8_0/q4_0 files. An OUT ending in "
            ".ninfer converts a Qwen3.5 checkpoint to .ninfer v3 instead, with --format."
        ),
    )
    parser.add_argument("folder", type=Path, help="the checkpoint folder")
    parser.add_argument("out", type=Path, help="the .vqf (or .ninfer) file to write")
    parser.add_argument("--qtype", choices=("f32", "f16", "q8_0", "q4_0"), default="q8_0")
    parser.add_argument(
        "--layout", choices=("legacy", "tiled"), default="legacy",
        help="tiled sets Q8_8X8|Q4_4X4 (vqf.md §2.5)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=NINFER_FORMATS, default="bf16",
        help=".ninfer only: the matrices' format (norms stay bf16, GDN gates fp32)",
    )  # fmt: skip
    parser.add_argument("--force", action="store_true", help="overwrite OUT (VQF only)")
    parser.add_argument(
        "--engine", choices=("ref", "fast"), default="fast", help="which codecs encode (same bytes)"
    )
    parser.add_argument(
        "--encrypt",
        action="store_true",
        help="VQF only: publish the file SM4-CTR encrypted (passphrase as for encrypt)",
    )
    add_passphrase_argument(parser)
    parser.add_argument(
        "--sign-key",
        type=Path,
        metavar="KEYFILE",
        help="VQF only: publish the file SM2-signed with this key (weightfile keygen)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    protected = args.encrypt or args.sign_key is not None
    if wants_ninfer(args):
        if protected:
            print("weightfile import: --encrypt and --sign-key are for VQF files", file=sys.stderr)
            return 2
        return run_ninfer(args)
    from weightfile.convert.qwen3_moe_vqf import checkpoint_is_qwen3_moe, import_qwen3_moe
    from weightfile.convert.qwen3_vqf import import_checkpoint, tokenizer_sidecar
    from weightfile.fast.vqf.protect_write import read_private_key

    from .protect import need_passphrase

    # the keys first: a missing passphrase or a bad key file must not cost a conversion
    key = need_passphrase("import", args) if args.encrypt else None
    sign_key = None if args.sign_key is None else read_private_key(args.sign_key)

    codecs = f"weightfile.{args.engine}.codecs.vqf"
    from weightfile.convert.qwen3_vl_vqf import import_vl_checkpoint, wants_vl

    # the config's architecture picks the importer: Qwen3-MoE is a version-3 file, Qwen3-VL
    # carries the vision tower
    if checkpoint_is_qwen3_moe(args.folder):
        importer = import_qwen3_moe
    elif wants_vl(args.folder):
        importer = import_vl_checkpoint
    else:
        importer = import_checkpoint
    path = importer(
        args.folder,
        args.out,
        qtype=args.qtype,
        layout=args.layout,
        overwrite=args.force,
        codecs=codecs,
        passphrase=key,
        sign_key=sign_key,
    )
    note = f" (+ {tokenizer_sidecar(path).name})" if tokenizer_sidecar(path).exists() else ""
    kinds = ", encrypted" * args.encrypt + ", signed" * (sign_key is not None)
    print(f"{args.folder} -> {path} [{args.qtype}, {args.layout}{kinds}]{note}")
    return 0
