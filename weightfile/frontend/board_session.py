"""`run` and `trace` under a numerics profile, with arrays named as the board's dumps name them.

`--profile kestrel-board` runs a dense Qwen3 VQF on the Qwen3 family's board model
(`ref.qwen3.board.BoardModel`, or `fast.qwen3.board.FastBoardModel` under `--engine fast`;
spec/numerics.md §board-forward), as the profile registry (`weightfile.profiles`) names it.
`pack_arrays` runs a prompt path and greedy decode steps under any profile and names every
array as the board engine's dumps do (spec/numerics.md §board-prompts), so a board team can
`weightfile diff` its own dump against ours.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.profiles import profile_named
from weightfile.ref.layers.sampling import greedy

from .session import Session


def pack_arrays(
    s: Session, profile: str, ids: Sequence[int], steps: int, path: str, ops: bool = False
) -> dict[str, np.ndarray]:
    """The prompt path and `steps` greedy decode steps, in the board dumps' names
    (spec/numerics.md §board-prompts): the profile's own generate function for the session's family
    (weightfile.profiles), else the canonical pass; ops (the profile's own only) adds the
    per-op intermediates."""
    stops = frozenset(s.stop_ids)
    generate = profile_named(profile).generator(s.family) if s.family is not None else None
    if generate is not None:
        return generate(s.model, ids, steps, path, ops, stops)
    return canonical_arrays(s, ids, steps, path, stops)


def canonical_arrays(
    s: Session, ids: Sequence[int], steps: int, path: str, stops: frozenset[int]
) -> dict[str, np.ndarray]:
    """The same names under the canonical profile, which is batch invariant
    (spec/numerics.md §batch-invariance): both prompt paths give the same numbers, only the names
    differ."""
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
