"""`weightfile run MODEL (--prompt TEXT | --token-ids 1,2,3)`: stream generated text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from weightfile import profiles
from weightfile.backends import backend_named

from ._common import (
    UsageError,
    add_force_argument,
    check_destination,
    nonnegative_int,
    passphrase,
    positive_int,
    temperature,
)
from ._prompt import (
    MAX_PIXELS_HINT,
    add_prompt_arguments,
    check_image_options,
    context_of,
    model_prompt_ids,
    needs_hf_tokenizer,
    reference_note,
    save_npz,
    threads,
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="generate text with the fast or the reference decoder",
        description=(
            "Generate from a VQF or .ninfer model and stream the text (token ids when no "
            "tokenizer is found). Stops at the file's eos_id (and <|im_end|> with --chat). The "
            "fast engine runs by default; --engine ref gives the same tokens from the readable "
            "reference decoder, slowly (a note on stderr estimates its time per token)."
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
    add_force_argument(parser, "--save-logits file")
    add_spec_arguments(parser)
    parser.set_defaults(run=run)


def add_spec_arguments(parser: Any) -> None:
    """--spec mtp, --draft-tokens K, --proposal (spec/models.md §qwen35-mtp-round)."""
    parser.add_argument(
        "--spec", choices=("mtp",),
        help="speculative decoding with the .ninfer file's MTP head (greedy: the same tokens as "
        "without it); stderr reports the acceptance rate, tokens per round and rounds",
    )  # fmt: skip
    parser.add_argument(
        "--draft-tokens", type=draft_count, default=None, metavar="K",
        help="with --spec: drafts per round, 1 to 5 (default 3)",
    )  # fmt: skip
    parser.add_argument(
        "--proposal", action="store_true",
        help="with --spec: draft with the file's proposal head (verification uses the full head)",
    )  # fmt: skip


def draft_count(text: str) -> int:
    """--draft-tokens: an integer from 1 to 5."""
    value = positive_int(text)
    if value > 5:
        raise argparse.ArgumentTypeError(f"must be from 1 to 5, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from weightfile.frontend.dispatch import load_session
    from weightfile.frontend.generate import stream_tokens
    from weightfile.frontend.tokenizer import TextStream

    board_options(args)
    spec_options(args)
    check_image_options(args)
    if args.save_logits is not None:  # before the decoding, not after it
        check_destination(args.save_logits, args.force)
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
    hint = MAX_PIXELS_HINT if args.image else ""
    args.max_tokens = within_context(s.arch, len(ids), args.max_tokens, hint)
    if args.spec is not None:
        return run_speculative(args, s, ids)
    if not profiles.profile_named(args.profile).canonical or args.save_logits is not None:
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


def within_context(arch: dict[str, Any], prompt: int, wanted: int, hint: str = "") -> int:
    """New tokens that fit the model's context (VQF max_seq_len, Qwen3.5
    max_position_embeddings), with a note on stderr when --max-tokens is cut; a prompt that
    fills it is a usage error (`hint`: what would shorten it)."""
    limit = context_of(arch)
    if not limit or prompt + wanted <= limit:
        return wanted
    if prompt >= limit:
        raise UsageError(f"the prompt's {prompt} tokens fill the model's context of {limit}{hint}")
    print(f"note: the model's context is {limit} tokens: generating {limit - prompt}, "
          f"not {wanted} (--max-tokens)", file=sys.stderr)  # fmt: skip
    return limit - prompt


def board_options(args: argparse.Namespace) -> None:
    """The combinations --profile, --prompt-path, --save-logits and --save-ops refuse."""
    if args.save_ops and args.save_logits is None:
        raise UsageError("--save-ops needs --save-logits OUT.npz")
    canonical = profiles.profile_named(args.profile).canonical
    others = " or ".join(p.name for p in profiles.ROWS if not p.canonical)
    if args.save_ops and canonical:
        raise UsageError(f"--save-ops needs --profile {others} (canonical ops: trace)")
    if (not canonical or args.save_logits is not None) and args.temperature > 0:
        raise UsageError(f"{others} and --save-logits decode greedily: no --temperature")


def spec_options(args: argparse.Namespace) -> None:
    """What --spec refuses: its options alone, another profile, images."""
    if args.spec is None:
        if args.draft_tokens is not None or args.proposal:
            raise UsageError("--draft-tokens and --proposal need --spec mtp")
        return
    if args.draft_tokens is None:
        args.draft_tokens = 3
    if not profiles.profile_named(args.profile).canonical:
        raise UsageError("--spec runs the canonical numerics only (no --profile)")
    if args.image:
        raise UsageError("--spec drafts for text prompts only (no --image)")


def run_speculative(args: argparse.Namespace, s: Any, ids: Any) -> int:
    """Generate with the MTP head, print the text, the summary on stderr, and with
    --save-logits the canonical arrays plus every round's mtp.round{r}.* arrays."""
    from weightfile.frontend.board_session import pack_arrays
    from weightfile.frontend.speculative import round_arrays, speculation_for, summary
    from weightfile.frontend.tokenizer import TextStream

    if s.family != "qwen35":
        raise UsageError("--spec mtp needs a Qwen3.5 .ninfer file with an mtp component")
    spec = speculation_for(s, args.draft_tokens, args.proposal, args.temperature, args.seed)
    tokens = []
    stream = None if s.tokenizer is None else TextStream(s.tokenizer)
    for t in spec.tokens(ids, args.max_tokens, s.stop_ids):
        tokens.append(t)
        print(f"{t} " if stream is None else stream.push(t), end="", flush=True)
    print("" if stream is None else stream.flush())
    print(summary(spec, tokens), file=sys.stderr)
    if args.save_logits is not None:
        arrays = pack_arrays(s, args.profile, ids, args.max_tokens, args.prompt_path)
        arrays |= round_arrays(spec)
        save_npz(args.save_logits, arrays, args.force)
        print(f"{len(arrays)} arrays -> {args.save_logits}", file=sys.stderr)
    return 0


#: What `run --profile kestrel-board --image` cannot promise (spec/numerics.md §board-vl-prefill).
BOARD_IMAGES_NOTE = (
    "note: kestrel-board with images: the vision tower is proven against the engine's packs; the "
    "text tower with images follows the engine's source and is not checked against engine "
    "logits (spec/numerics.md §board-vl-prefill)"
)


def run_pack(args: argparse.Namespace, s: Any, ids: Any) -> int:
    """Generate greedily under the profile, print the text, and write the board-named arrays
    (spec/numerics.md §board-prompts) when --save-logits is given."""
    from weightfile.frontend.board_session import pack_arrays
    from weightfile.frontend.tokenizer import TextStream

    if getattr(s.model, "pending", None):  # a board VL model with images (the profile's own)
        print(BOARD_IMAGES_NOTE, file=sys.stderr)
    arrays = pack_arrays(s, args.profile, ids, args.max_tokens, args.prompt_path, args.save_ops)
    tag = "decode" if args.prompt_path == "prefill" else "decode_path"
    tokens = arrays[f"{tag}.tokens"].tolist()
    if s.tokenizer is None:
        print(" ".join(str(t) for t in tokens))
    else:
        stream = TextStream(s.tokenizer)
        print("".join(stream.push(t) for t in tokens) + stream.flush())
    if args.save_logits is not None:
        save_npz(args.save_logits, arrays, args.force)
        print(f"{len(arrays)} arrays -> {args.save_logits}", file=sys.stderr)
    return 0
