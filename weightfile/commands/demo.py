"""`weightfile demo`: build (or reuse) a tiny Qwen3 model, verify it, run a prompt."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ._common import positive_int, utf8_text


def register(sub: Any) -> None:
    from weightfile.ref.user_cache import CACHE_WORDING

    parser = sub.add_parser(
        "demo",
        help="the whole pipeline on a tiny built-in model, in seconds",
        description=(
            "Train a small BPE tokenizer on a bundled text, build a tiny Qwen3-architecture "
            f"model from it, write it as VQF (cached in demo/ of {CACHE_WORDING}), verify it "
            "with the strict validator, then generate greedily from a prompt with the "
            "reference decoder and print the tokens."
        ),
    )
    parser.add_argument(
        "--prompt", type=utf8_text, default=None, help="UTF-8 text; default: 'The weight file'"
    )
    parser.add_argument("--max-tokens", type=positive_int, default=16, help="new tokens at most")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.demo import DEFAULT_PROMPT, demo_model, verify
    from weightfile.frontend.dispatch import load_session
    from weightfile.frontend.generate import stream_tokens
    from weightfile.frontend.session import prompt_ids
    from weightfile.frontend.tokenizer import TextStream

    start = time.perf_counter()
    path, built = demo_model()
    how = f"built in {time.perf_counter() - start:.1f} s" if built else "cached"
    print(f"model     {path} ({how})")
    verify(path)
    print("verified  strict validator with checksum: no violations")
    s = load_session(path, None, need_tokenizer=True)
    prompt = args.prompt if args.prompt is not None else DEFAULT_PROMPT
    ids = list(prompt_ids(s, prompt, None))
    print(f"prompt    {prompt!r} -> {ids}")
    assert s.tokenizer is not None
    stream = TextStream(s.tokenizer)
    tokens: list[int] = []
    print(f"text      {prompt}", end="", flush=True)
    for t in stream_tokens(s.model, ids, args.max_tokens, s.stop_ids):
        tokens.append(t)
        print(stream.push(t), end="", flush=True)
    print(stream.flush())
    print(f"tokens    {tokens}")
    return 0
