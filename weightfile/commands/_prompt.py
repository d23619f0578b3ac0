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

from ._common import UsageError, add_passphrase_argument, positive_int, token_ids, utf8_text


def add_prompt_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL, the prompt (text or ids), --chat and --tokenizer; run and trace share them."""
    parser.add_argument("model", type=Path, help="a .vqf or .ninfer file")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", type=utf8_text, help="prompt text, UTF-8 (needs a tokenizer)")
    src.add_argument("--token-ids", type=token_ids, help="prompt token ids, comma separated: 1,2,3")
    parser.add_argument("--chat", action="store_true", help="wrap --prompt in the chat template")
    parser.add_argument(
        "--tokenizer",
        type=Path,
        help="tokenizer.json (default: the .ninfer's own, MODEL.tokenizer.json)",
    )
    parser.add_argument(
        "--engine", choices=ENGINES, default="fast",
        help="fast: C kernels on the mapped weights (the reference, with a note, where no C "
        "compiler exists); ref: the readable reference decoder, the same bits, minutes per token "
        "at real sizes (a note estimates it) (default: fast)",
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
    parser.add_argument(
        "--tokenizer-mode", choices=("hf", "board"), default="hf",
        help="hf: the tokenizer.json's BPE; board (with --profile kestrel-board): the engine's "
        "greedy longest match over its vocab.bin, so a board dump made from text is "
        "reproducible (spec/vqf.md §vocab-bin-encode)",
    )  # fmt: skip
    parser.add_argument(
        "--vocab-bin", type=Path, default=None,
        help="--tokenizer-mode board: the engine's vocab.bin (default: vocab.bin beside MODEL)",
    )  # fmt: skip
    add_passphrase_argument(parser)
    _add_image_arguments(parser)


def _add_image_arguments(parser: argparse.ArgumentParser) -> None:
    """--image and how it is prepared (Qwen3-VL, weightfile/frontend/image.py)."""
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
    parser.add_argument(
        "--max-image-pixels", type=positive_int, default=2 * 4096 * 4096,
        help="the most pixels an --image file may declare in its header; larger is refused "
        "before decoding (default 2*4096^2, twice what the processor keeps)",
    )  # fmt: skip


#: Above this many bytes a file run by the reference engine gets the estimate's note: the
#: reference decodes ~10^5-10^6 weights a second, so 16 MiB of weights is tens of seconds a token.
REFERENCE_NOTE_BYTES = 16 << 20


def reference_note(args: argparse.Namespace) -> str | None:
    """One line for stderr when the reference engine will run a file above REFERENCE_NOTE_BYTES:
    `--engine ref`, no C kernels, or a .ninfer file (no fast forward pass), with the reference's
    time per token estimated as `weightfile bench` estimates it (weightfile/bench/engines.py:
    its matrix-vector products timed on a few rows of every matrix). None otherwise, and for a
    file that cannot be read here (the session reports why)."""
    import os

    from weightfile.fast._native import library
    from weightfile.formats import sniff
    from weightfile.spec.errors import WeightfileError

    try:
        size = os.stat(args.model).st_size
        kind = sniff(args.model) if size > REFERENCE_NOTE_BYTES else None
    except (OSError, WeightfileError):
        return None
    if kind is None or (kind == "vqf" and args.engine == "fast" and library() is not None):
        return None
    why = "with --engine ref" if args.engine == "ref" else "here"
    head = f"note: the reference engine runs this {size / 1e6:.0f} MB file {why}"
    seconds = estimate_reference_seconds(args.model) if kind == "vqf" else None
    if seconds is None:
        return f"{head}: expect minutes per token"
    tail = "; --engine fast gives the same tokens" if args.engine == "ref" else ""
    return f"{head}: about {duration(seconds)} per token (estimated){tail}"


def estimate_reference_seconds(path: Path) -> float | None:
    """`weightfile bench`'s estimate of one reference token, or None when the header, directory
    or payloads cannot be read without more (an encrypted file: no passphrase is spent here)."""
    from weightfile.bench.engines import estimate_ref_token_seconds
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.errors import WeightfileError

    try:
        with open_vqf(path) as vqf:
            return estimate_ref_token_seconds(vqf)
    except (OSError, WeightfileError, KeyError, ValueError):
        return None


def duration(seconds: float) -> str:
    """12 s, 3.5 min, 2.1 h: the unit a person reads a waiting time in."""
    if seconds < 90:
        return f"{seconds:.2g} s"
    if seconds < 5400:
        return f"{seconds / 60:.2g} min"
    return f"{seconds / 3600:.2g} h"


def needs_hf_tokenizer(args: argparse.Namespace) -> bool:
    """A text prompt encoded by the tokenizer.json (not by the board's vocab.bin)."""
    return args.prompt is not None and getattr(args, "tokenizer_mode", "hf") == "hf"


def board_prompt_ids(s: Any, args: argparse.Namespace) -> list[int]:
    """--tokenizer-mode board: the text through the engine's encoder over its vocab.bin
    (spec/vqf.md §vocab-bin-encode); ids outside the model's vocabulary are frontend.prompt."""
    from weightfile.ref.vqf.vocab_bin import encode_board, read_vocab_bin
    from weightfile.spec.errors import InvalidError

    if args.profile != "kestrel-board":
        raise UsageError("--tokenizer-mode board needs --profile kestrel-board")
    if args.chat or args.image:
        raise UsageError("--tokenizer-mode board encodes the --prompt text as given: no --chat, "
                         "no --image")  # fmt: skip
    ids = encode_board(read_vocab_bin(args.vocab_bin or Path(args.model).parent / "vocab.bin"),
                       args.prompt)  # fmt: skip
    vocab = int(s.arch.get("vocab_size") or 0)
    if not ids or any(i >= vocab for i in ids):
        why = f"the board encoding {ids[:8]} is empty or outside the model's vocabulary of {vocab}"
        raise InvalidError("frontend.prompt", why, path="--prompt")
    return ids


def model_prompt_ids(s: Any, args: argparse.Namespace) -> list[int]:
    """The prompt ids; with --image the images are prepared and attached to the model."""
    from weightfile.frontend.image import image_prompt_ids
    from weightfile.frontend.session import prompt_ids

    if getattr(args, "tokenizer_mode", "hf") == "board" and args.prompt is not None:
        return board_prompt_ids(s, args)
    if args.image:
        pixels = (args.min_pixels, args.max_pixels)
        ids = image_prompt_ids(
            s,
            args.prompt,
            args.token_ids,
            args.chat,
            args.image,
            args.image_preprocess,
            pixels,
            args.max_image_pixels,
        )
        limit = context_of(s.arch)
        if limit and len(ids) > limit:
            raise UsageError(f"the prompt's {len(ids)} tokens, images included, exceed the "
                             f"model's context of {limit}{MAX_PIXELS_HINT}")  # fmt: skip
        return ids
    return list(prompt_ids(s, args.prompt, args.token_ids, args.chat))


#: What to do when images make the prompt too long: fewer pixels, fewer vision tokens.
MAX_PIXELS_HINT = "; a smaller --max-pixels gives each image fewer tokens"


def context_of(arch: dict[str, Any]) -> int:
    """The model's context in tokens (VQF max_seq_len, Qwen3.5 max_position_embeddings), 0 when
    the file states none."""
    return int(arch.get("max_seq_len") or arch.get("max_position_embeddings") or 0)


def check_image_options(args: argparse.Namespace) -> None:
    """--min-pixels above --max-pixels is a usage error, before the model is loaded."""
    if args.min_pixels > args.max_pixels:
        raise UsageError(f"--min-pixels {args.min_pixels} is above --max-pixels {args.max_pixels}")


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
    staged beside `path`, published by rename, an existing file replaced only with --force;
    `-` is standard output (`output_stream`)."""
    from ._common import output_stream

    with output_stream(path, force) as f:
        np.savez(f, **arrays)  # a file object: savez adds no ".npz"
