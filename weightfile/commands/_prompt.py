"""The arguments `run` and `trace` share (MODEL, the prompt, the engine, threads, profile, images)
and what both do with them: the prompt ids, the thread count, the .npz writer.

One module below both commands, so neither command imports the other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from weightfile import profiles
from weightfile.backends import ENGINES

from ._common import add_passphrase_argument, positive_int, token_ids


def add_prompt_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL, the prompt (text or ids), --chat and --tokenizer; run and trace share them."""
    parser.add_argument("model", type=Path, help="a .vqf or .ninfer file")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="prompt text (needs a tokenizer)")
    src.add_argument("--token-ids", type=token_ids, help="prompt token ids, comma separated: 1,2,3")
    parser.add_argument("--chat", action="store_true", help="wrap --prompt in the chat template")
    parser.add_argument(
        "--tokenizer",
        type=Path,
        help="tokenizer.json (default: the .ninfer's own, MODEL.tokenizer.json)",
    )
    parser.add_argument(
        "--engine", choices=ENGINES, default="ref",
        help="ref: the reference decoder; fast: C kernels on the mapped weights, same bits "
        "(a .ninfer file runs the reference, with a note)",
    )  # fmt: skip
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="threads of the fast engine's matrix products (default 1, or the --cpus count)",
    )
    parser.add_argument(
        "--cpus", metavar="LIST", default=None,
        help="pin the process to these CPUs (0,2-3, as taskset -c); the same tokens on any set "
        "(default: the big cores of a big.LITTLE machine, else no pinning)",
    )  # fmt: skip
    parser.add_argument(
        "--profile", choices=profiles.names(), default=profiles.DEFAULT,
        help="numerics (weightfile/profiles.py): " + "; ".join(
            f"{p.name}: {p.summary}, runs {p.runs}" + (f" ({p.limits})" if p.limits else "")
            for p in profiles.ROWS),
    )  # fmt: skip
    parser.add_argument(
        "--prompt-path", choices=("prefill", "tokenwise"), default="prefill",
        help="kestrel-board: the engine's batched prefill, or each prompt token through the "
        "decode step (spec/numerics.md §board-prompts)",
    )  # fmt: skip
    add_passphrase_argument(parser)
    parser.add_argument(
        "--image", type=Path, action="append", metavar="PATH",
        help="Qwen3-VL: an image for the prompt (repeatable); each <image> in --prompt (or "
        "image_token_id in --token-ids) is the next one; without <image> the images come first",
    )  # fmt: skip
    parser.add_argument(
        "--image-preprocess", choices=("hf", "board"), default="hf",
        help="hf: the Hugging Face processor (bicubic, bit for bit); board: the engine's nearest "
        "resize and p/127.5-1",
    )  # fmt: skip
    parser.add_argument(
        "--min-pixels", type=positive_int, default=65536,
        help="hf: the processor's least pixel count (size.shortest_edge)",
    )  # fmt: skip
    parser.add_argument(
        "--max-pixels", type=positive_int, default=16777216,
        help="hf: the processor's largest pixel count (size.longest_edge)",
    )  # fmt: skip


def model_prompt_ids(s: Any, args: argparse.Namespace) -> list[int]:
    """The prompt ids; with --image the images are prepared and attached to the model."""
    from weightfile.frontend.image import image_prompt_ids
    from weightfile.frontend.session import prompt_ids

    if args.image:
        pixels = (args.min_pixels, max(args.min_pixels, args.max_pixels))
        return image_prompt_ids(
            s, args.prompt, args.token_ids, args.chat, args.image, args.image_preprocess, pixels
        )
    return list(prompt_ids(s, args.prompt, args.token_ids, args.chat))


def threads(args: argparse.Namespace) -> int:
    """--threads (its parser type already refuses values below 1), after pinning the process to
    --cpus (weightfile/cpus.py: before the kernels' thread pool starts); without --threads, the
    number of CPUs --cpus names, else 1."""
    from weightfile import cpus

    pinned = cpus.apply(getattr(args, "cpus", None))
    if args.threads is not None:
        return int(args.threads)
    return len(pinned) if pinned is not None and args.cpus is not None else 1


def save_npz(path: Path, arrays: dict[str, np.ndarray], force: bool) -> None:
    """Write by the one output policy (ref/staging.py `staged`, spec/ninfer3.md §safe-files):
    staged beside `path`, published by rename, an existing file replaced only with --force."""
    from weightfile.ref.staging import staged

    with staged(path, force) as f:
        np.savez(f, **arrays)  # a file object: savez adds no ".npz"
