"""`weightfile trace MODEL (--prompt TEXT | --token-ids 1,2,3) --out trace.npz`.

One prefill over the prompt with every operation recorded (names of ref/qwen3/trace.py:
embed, layers.L.<op>, final_norm, logits, each float32 [tokens, width]) plus `input_ids`
(int64 [tokens]), so an engine team can diff its own dumps name by name. With `--profile
kestrel-board`: the prompt path and one decode step in the board dumps' names
(spec/numerics.md §board-prompts); with `--image` on a Qwen3-VL file, the board vision tower's
arrays in the engine dumps' names instead, and nothing else (no input_ids), so that
`weightfile diff` against an engine dump of the image path compares every array
(spec/numerics.md §board-vision-names).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.backends import backend_named

from ._common import add_force_argument, passphrase, report_stream
from ._prompt import (
    add_prompt_arguments,
    check_image_options,
    model_prompt_ids,
    needs_hf_tokenizer,
    reference_note,
    save_npz,
    threads,
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "trace",
        help="dump every operation's output of one forward pass to .npz",
        description=(
            "Run the prompt through the decoder (--engine: fast by default, ref the same bits "
            "slowly) and save every traced operation per layer, plus input_ids and logits "
            "([tokens, vocab] float32), to an .npz file."
        ),
    )
    add_prompt_arguments(parser)
    parser.add_argument(
        "--out", type=Path, required=True, help="the .npz to write; - for standard output"
    )
    add_force_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.frontend.dispatch import load_session
    from weightfile.profiles import profile_named
    from weightfile.ref.layers.trace import TraceRecorder

    from ._common import check_destination

    check_image_options(args)
    check_destination(args.out, args.force)  # before the forward pass, not after it
    if (note := reference_note(args)) is not None:  # before the slow load, not after it
        print(note, file=sys.stderr)
    s = load_session(
        args.model,
        args.tokenizer,
        needs_hf_tokenizer(args),
        backend_named(args.engine),
        threads(args),
        passphrase=passphrase(args),
        profile=args.profile,
        images=bool(args.image),
    )
    if s.note:
        print(s.note, file=sys.stderr)
    ids = model_prompt_ids(s, args)
    if not profile_named(args.profile).canonical:
        return board_trace(args, s, ids)
    recorder = TraceRecorder()
    images = tuple(getattr(s.model, "pending_images", ()))  # Qwen3-VL: what --image attached
    s.model.forward(ids, s.model.new_cache(), trace=recorder)
    arrays = {"input_ids": np.array(ids, dtype=np.int64), **recorder.arrays()}
    if images:
        arrays["pixel_values"] = np.concatenate([im.pixel_values for im in images])
        arrays["image_grid_thw"] = np.array([im.grid_thw for im in images], dtype=np.int64)
    save_npz(args.out, arrays, args.force)
    print(
        f"{len(arrays)} arrays over {len(ids)} tokens -> {args.out}", file=report_stream(args.out)
    )
    return 0


#: What `trace --profile kestrel-board --image` leaves out (spec/numerics.md §board-vision-names).
VISION_ONLY_NOTE = (
    "note: kestrel-board with images: the vision tower's arrays only (the text tower with images "
    "is not reproduced here: `run --save-logits` writes its logits, read from the engine's source "
    "and not checked against engine logits, spec/numerics.md §board-vl-prefill)"
)


def board_trace(args: argparse.Namespace, s: Any, ids: list[int]) -> int:
    """--profile kestrel-board: the prompt path and the first decode step, with every per-op
    intermediate under the board dumps' names (spec/numerics.md §board-prompts)."""
    from weightfile.frontend.board_session import pack_arrays

    if getattr(s.model, "pending", None):  # images on a board VL model: the tower's names only
        arrays = s.model.vision_arrays()
        print(VISION_ONLY_NOTE, file=sys.stderr)
    else:
        arrays = {"input_ids": np.array(ids, dtype=np.int64)}
        arrays |= pack_arrays(s, args.profile, ids, 1, args.prompt_path, ops=True)
    save_npz(args.out, arrays, args.force)
    print(
        f"{len(arrays)} arrays over {len(ids)} tokens -> {args.out}", file=report_stream(args.out)
    )
    return 0
