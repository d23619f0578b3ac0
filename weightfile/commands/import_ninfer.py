"""`weightfile import HF_DIR OUT.ninfer --format FORMAT`: a Qwen3.5 checkpoint to `.ninfer` v3.

`weightfile import` dispatches here when OUT ends in `.ninfer` (spec/ninfer3.md §6); the VQF path
of the same command is unchanged.
"""

from __future__ import annotations

import argparse

NINFER_SUFFIX = ".ninfer"
FORMATS = ("bf16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16")


def wants_ninfer(args: argparse.Namespace) -> bool:
    """The output names a `.ninfer` file."""
    return args.out.suffix == NINFER_SUFFIX


def run(args: argparse.Namespace) -> int:
    from weightfile.convert.qwen35_ninfer import FAST_CODECS, REF_CODECS, import_checkpoint
    from weightfile.spec.errors import UnsupportedError

    if args.force:  # the .ninfer writer never replaces a file set (spec/ninfer3.md §1.7)
        raise UnsupportedError(
            "qwen35.import.force", "--force is VQF only; remove the .ninfer file set first"
        )

    codecs = FAST_CODECS if args.engine == "fast" else REF_CODECS
    paths = import_checkpoint(args.folder, args.out, fmt=args.format, codecs=codecs)
    more = f" (+ {len(paths) - 1} continuation file(s))" if len(paths) > 1 else ""
    print(f"{args.folder} -> {paths[0]} [{args.format}]{more}")
    return 0
