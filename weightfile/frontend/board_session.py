"""`run` and `trace` under a numerics profile, with arrays named as the board's dumps name them.

`--profile kestrel-board` binds a dense Qwen3 VQF into `ref.kestrel_board.BoardModel`
(spec/numerics.md §20.9); `--engine fast` binds `fast.kestrel_board.FastBoardModel` instead,
the same numbers from the C kernels (the reference with a note when they cannot be built).
`pack_arrays` runs a prompt path and greedy decode steps under either profile and names every
array as the board engine's dumps do (spec/numerics.md §20.9.3), so a board team can
`weightfile diff` its own dump against ours.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from weightfile.fast.backend import FAST
from weightfile.formats import sniff
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.layers.sampling import greedy
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import NotFoundError, UnsupportedError

from .session import Session
from .tokenizer import find_tokenizer, load_tokenizer

BOARD = "kestrel-board"
BOARD_FAST_NOTE = "note: the C kernels are unavailable; engine fast runs the board reference"


def load_board_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    backend: Backend = REFERENCE,
    passphrase: bytes | None = None,
    threads: int = 1,
) -> Session:
    """The kestrel-board model of a dense Qwen3 VQF and its tokenizer (spec/numerics.md §20.9)."""
    from weightfile.fast._native import library
    from weightfile.ref.kestrel_board.model import bind_board

    if sniff(path) == "ninfer":
        raise UnsupportedError(
            "frontend.profile.unsupported",
            "the kestrel-board profile runs dense Qwen3 VQF files, not .ninfer",
            path="--profile",
        )
    with open_vqf(path, passphrase=passphrase) as vqf:
        note = None
        if backend is FAST and library() is None:
            note = BOARD_FAST_NOTE
        if backend is FAST and note is None:
            from weightfile.fast.kestrel_board.model import bind_board_fast

            model = bind_board_fast(vqf, threads=threads)
        else:
            model = bind_board(vqf)
        arch = dict(vqf.header.arch)
    s = Session(model, arch, Path(path), stop_ids={int(arch["eos_id"])}, note=note)  # type: ignore[arg-type]
    try:
        s.tokenizer = load_tokenizer(find_tokenizer(path, tokenizer))
    except NotFoundError:
        if need_tokenizer or tokenizer is not None:
            raise
    return s


def pack_arrays(
    s: Session, profile: str, ids: Sequence[int], steps: int, path: str, ops: bool = False
) -> dict[str, np.ndarray]:
    """The prompt path and `steps` greedy decode steps, in the board dumps' names
    (spec/numerics.md §20.9.3); ops (kestrel-board only) adds the per-op intermediates."""
    stops = frozenset(s.stop_ids)
    if profile == BOARD:
        from weightfile.ref.kestrel_board.model import generate

        return generate(s.model, ids, steps, path, ops, stops)  # type: ignore[arg-type]
    return canonical_arrays(s, ids, steps, path, stops)


def canonical_arrays(
    s: Session, ids: Sequence[int], steps: int, path: str, stops: frozenset[int]
) -> dict[str, np.ndarray]:
    """The same names under the canonical profile, which is batch invariant
    (spec/numerics.md §12): both prompt paths give the same numbers, only the names differ."""
    model, cache = s.model, s.model.new_cache()
    prompt_logits = np.asarray(model.forward(list(ids), cache), dtype=np.float32)
    tag = "decode" if path == "prefill" else "decode_path"
    out: dict[str, np.ndarray] = {}
    if path == "prefill":
        out["prefill.logits"] = prompt_logits[-1]
    else:
        out["prompt.decode_path.logits"] = prompt_logits
    tokens: list[int] = []
    nxt = greedy(prompt_logits[-1])
    for k in range(steps):
        if nxt in stops:
            break
        tokens.append(nxt)
        logits = np.asarray(model.forward([nxt], cache), dtype=np.float32)[0]
        out[f"{tag}.step{k}.logits"] = logits
        nxt = greedy(logits)
    out[f"{tag}.tokens"] = np.array(tokens, dtype=np.int32)
    return out
