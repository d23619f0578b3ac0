"""`weightfile run MODEL (--prompt TEXT | --token-ids 1,2,3)`: stream generated text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import (
    UsageError,
    add_passphrase_argument,
    nonnegative_int,
    passphrase,
    positive_int,
    temperature,
    token_ids,
)


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
        "--engine", choices=("ref", "fast"), default="ref",
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
        "--profile", choices=("canonical", "kestrel-board"), default="canonical",
        help="numerics: canonical (spec/numerics.md §profiles), or kestrel-board, the RK3588 "
        "engine's own arithmetic bit for bit (spec/numerics.md §board; reference engine, VQF only)",
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


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="generate text with the reference or the fast decoder",
        description=(
            "Generate from a VQF model and stream the text (token ids when no tokenizer is "
            "found). Stops at the file's eos_id (and <|im_end|> with --chat). --engine fast "
            "gives the same tokens as the reference decoder, faster."
        ),
    )
    add_prompt_arguments(parser)
    parser.add_argument("--max-tokens", type=positive_int, default=32, help="new tokens at most")
    parser.add_argument("--temperature", type=temperature, default=0.0, help="0 means greedy")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the sampler (§11)")
    parser.add_argument(
        "--save-logits", type=Path, metavar="OUT.npz",
        help="also write the logits and tokens under the board dumps' names (prefill.logits, "
        "decode.tokens, decode.step{k}.logits; tokenwise: prompt.decode_path.logits, ...)",
    )  # fmt: skip
    parser.add_argument(
        "--save-ops", action="store_true",
        help="with --save-logits and --profile kestrel-board: also the per-op intermediates "
        "(decode.step0.layer{l}.*, prefill.last.*)",
    )  # fmt: skip
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.frontend.generate import stream_tokens
    from weightfile.frontend.session import load_session
    from weightfile.frontend.tokenizer import TextStream

    board_options(args)
    s = load_session(
        args.model,
        args.tokenizer,
        args.prompt is not None,
        args.engine,
        threads(args),
        passphrase=passphrase(args),
        profile=args.profile,
    )
    if s.note:
        print(s.note, file=sys.stderr)
    ids = model_prompt_ids(s, args)
    args.max_tokens = within_context(s.arch, len(ids), args.max_tokens)
    if args.profile != "canonical" or args.save_logits is not None:
        return run_pack(args, s, ids)
    tokens = stream_tokens(s.model, ids, args.max_tokens, s.stop_ids, args.temperature, args.seed)
    if s.tokenizer is None:  # ids in, ids out
        for t in tokens:
            print(t, end=" ", flush=True)
    else:
        stream = TextStream(s.tokenizer)
        for t in tokens:
            print(stream.push(t), end="", flush=True)
        print(stream.flush(), end="")
    print()
    return 0


def within_context(arch: dict[str, Any], prompt: int, wanted: int) -> int:
    """New tokens that fit the model's context (VQF max_seq_len, Qwen3.5
    max_position_embeddings), with a note on stderr when --max-tokens is cut; a prompt that
    fills it is a usage error."""
    limit = int(arch.get("max_seq_len") or arch.get("max_position_embeddings") or 0)
    if not limit or prompt + wanted <= limit:
        return wanted
    if prompt >= limit:
        raise UsageError(f"the prompt's {prompt} tokens fill the model's context of {limit}")
    print(f"note: the model's context is {limit} tokens: generating {limit - prompt}, "
          f"not {wanted} (--max-tokens)", file=sys.stderr)  # fmt: skip
    return limit - prompt


def board_options(args: argparse.Namespace) -> None:
    """The combinations --profile, --prompt-path, --save-logits and --save-ops refuse."""
    if args.save_ops and args.save_logits is None:
        raise UsageError("--save-ops needs --save-logits OUT.npz")
    if args.save_ops and args.profile != "kestrel-board":
        raise UsageError("--save-ops needs --profile kestrel-board (canonical ops: trace)")
    greedy_only = args.profile != "canonical" or args.save_logits is not None
    if greedy_only and args.temperature > 0:
        raise UsageError("kestrel-board and --save-logits decode greedily: no --temperature")


def run_pack(args: argparse.Namespace, s: Any, ids: Any) -> int:
    """Generate greedily under the profile, print the text, and write the board-named arrays
    (spec/numerics.md §20.9.3) when --save-logits is given."""
    from weightfile.frontend.board_session import pack_arrays
    from weightfile.frontend.tokenizer import TextStream

    from .trace import save_npz

    arrays = pack_arrays(s, args.profile, ids, args.max_tokens, args.prompt_path, args.save_ops)
    tag = "decode" if args.prompt_path == "prefill" else "decode_path"
    tokens = arrays[f"{tag}.tokens"].tolist()
    if s.tokenizer is None:
        print(" ".join(str(t) for t in tokens))
    else:
        stream = TextStream(s.tokenizer)
        print("".join(stream.push(t) for t in tokens) + stream.flush())
    if args.save_logits is not None:
        save_npz(args.save_logits, arrays)
        print(f"{len(arrays)} arrays -> {args.save_logits}", file=sys.stderr)
    return 0
