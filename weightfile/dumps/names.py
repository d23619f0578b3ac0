"""The names two dumps are compared under (spec/numerics.md §dump-diff, §board-prompts).

A `weightfile trace` file (`input_ids` and `layers.L.<op>`, each [tokens, width]) is compared
with another trace name by name, every token and every array (the vision tower's too). Held
against a board dump, it is read in the board's names: the last prompt token of each op the
board records (`prefill.last.layer{l}.<op>`, `prefill.last.final_norm`, `prefill.logits`) and
the logits of every prompt token (`prompt.decode_path.logits`); everything else — the embedding,
the ops the board does not dump, the vision tower, and the earlier tokens of each op — is named
as not mapped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .read import Dump

#: Per-op names of the board, in forward-pass order (spec/numerics.md §board-prompts).
OP_ORDER = (
    "attn_norm", "q_proj", "k_proj", "v_proj", "q_norm", "k_norm", "q_rope", "k_rope",
    "attn_out", "o_proj_residual", "ffn_norm", "gate_proj", "up_proj", "silu_mul",
    "down_residual", "moe.router_logits", "moe.experts", "moe.weights", "moe.out",
    "ffn_residual",
)  # fmt: skip
#: Trace op names (ref/qwen3/trace.py) that have a board counterpart.
TRACE_TO_BOARD = {
    "attn_norm": "attn_norm", "q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj",
    "q_norm": "q_norm", "k_norm": "k_norm", "q_rope": "q_rope", "k_rope": "k_rope",
    "attn": "attn_out", "attn_residual": "o_proj_residual", "ffn_norm": "ffn_norm",
    "gate_proj": "gate_proj", "up_proj": "up_proj", "swiglu": "silu_mul",
    "ffn_residual": "down_residual",
}  # fmt: skip
BOARD_OP = re.compile(r"(?P<phase>.+)\.layer(?P<layer>\d+)\.(?P<op>\w+(?:\.\w+)?)")
TRACE_OP = re.compile(r"layers\.(?P<layer>\d+)\.(?P<op>\w+)")
BOARD_PHASES = ("prefill.", "decode.", "decode_path.", "prompt.")
#: Trace arrays that are inputs, not per-token operations.
TRACE_INPUTS = ("input_ids", "pixel_values", "image_grid_thw")


@dataclass(frozen=True, slots=True)
class Source:
    """Where a compared array comes from: a dump's array, or a row selection of one."""

    name: str  # the array's own name in its file
    rows: str  # "" (all), "last" (the last token)
    read: Callable[[], np.ndarray]

    @property
    def shown(self) -> str:
        return f"{self.name}[-1]" if self.rows == "last" else self.name


@dataclass(slots=True)
class View:
    """A dump under the names it is compared by, in its order, with what could not be named."""

    arrays: dict[str, Source]
    unmapped: list[tuple[str, str]]  # (array name in its file, why it has no counterpart)
    notes: list[str]


def is_trace(names: list[str]) -> bool:
    return "input_ids" in names and any(TRACE_OP.fullmatch(n) for n in names)


def is_board(names: list[str]) -> bool:
    return not is_trace(names) and any(n.startswith(BOARD_PHASES) for n in names)


def direct_view(dump: Dump) -> View:
    """Every array under its own name."""
    return View({n: Source(n, "", _reader(dump, n)) for n in dump.names}, [], [])


def board_view(dump: Dump) -> View:
    """A trace in the board's names (module docstring); the rest listed as not mapped."""
    arrays: dict[str, Source] = {}
    unmapped: list[tuple[str, str]] = []
    per_token = 0
    for name, h in dump.headers.items():
        m = TRACE_OP.fullmatch(name)
        target = None
        if m and m["op"] in TRACE_TO_BOARD:
            target = f"prefill.last.layer{m['layer']}.{TRACE_TO_BOARD[m['op']]}"
        elif name == "final_norm":
            target = "prefill.last.final_norm"
        elif name == "logits" and len(h.shape) == 2:
            arrays["prompt.decode_path.logits"] = Source(name, "", _reader(dump, name))
            target = "prefill.logits"
        elif name in TRACE_INPUTS:
            arrays[name] = Source(name, "", _reader(dump, name))
            continue
        if target is None:
            unmapped.append((name, "the board dumps no such array"))
        elif len(h.shape) != 2 or h.shape[0] == 0:
            unmapped.append((name, f"shape {h.shape} is not [tokens, width]"))
        else:
            arrays[target] = Source(name, "last", _last_row(dump, name))
            per_token = max(per_token, h.shape[0])
    notes = []
    if per_token > 1:
        notes.append(
            f"tokens 0..{per_token - 2} of the trace's per-op arrays are not compared: the board "
            "dumps the last prompt token only (prefill.last.*); the logits of every token are "
            "compared as prompt.decode_path.logits"
        )
    return View(arrays, unmapped, notes)


def _reader(dump: Dump, name: str) -> Callable[[], np.ndarray]:
    return lambda: dump.array(name)


def _last_row(dump: Dump, name: str) -> Callable[[], np.ndarray]:
    return lambda: dump.array(name)[-1]


def views(a: Dump, b: Dump) -> tuple[View, View, str]:
    """Both dumps' views and how they were named: "direct" or "trace as board" (A or B)."""
    ta, tb = is_trace(a.names), is_trace(b.names)
    if ta and is_board(b.names):
        return board_view(a), direct_view(b), "A, a trace, read in the board's names"
    if tb and is_board(a.names):
        return direct_view(a), board_view(b), "B, a trace, read in the board's names"
    return direct_view(a), direct_view(b), ""


def board_order(name: str) -> tuple:
    """Sort key of board names: phase, then layer, then the op's place in the layer."""
    m = BOARD_OP.fullmatch(name)
    if m:
        op = OP_ORDER.index(m["op"]) if m["op"] in OP_ORDER else len(OP_ORDER)
        return (m["phase"].removesuffix(".last"), 1, int(m["layer"]), op, name)
    phase, _, leaf = name.rpartition(".")
    rank = {"embedding": 0, "final_norm": 2}.get(leaf, 3)
    # prefill.last.* and prefill.logits are one pass: its layers, final norm, then logits
    return ((phase or name).removesuffix(".last"), rank, 0, 0, name)


def is_op(name: str) -> bool:
    """An operation's output (not an input or token list): where a divergence can start."""
    return name not in TRACE_INPUTS and not name.endswith(".tokens")


def divergence(name: str, first_index: list[int]) -> str:
    """`first divergence: ...` for the first differing op, in the words of its scheme."""
    m = BOARD_OP.fullmatch(name)
    if m:
        return f"{m['phase']}: layer {m['layer']} op {m['op']}"
    if name.endswith((".embedding", ".final_norm")):
        phase, _, leaf = name.rpartition(".")
        return f"{phase}: {leaf}"
    if first_index and (TRACE_OP.fullmatch(name) or name in ("embed", "final_norm", "logits")):
        return f"{name}, token {first_index[0]}"
    if first_index and name.startswith("vision."):
        return f"{name}, row {first_index[0]}"
    return name
