"""Op-level replay of an engine dump (spec/numerics.md §replay): recompute every operation whose
input is in the dump from the dump's own input, and compare each of its outputs with the dump's.

An engine team learns which operation is wrong whatever drift came before it: the inputs are
the engine's, not ours. The vocabulary is a table of replayable operations (`ROWS`): a row names
its input arrays, its output arrays, the profiles and families it replays under and the function
("module:attribute", imported on first use) that computes the outputs from the model and the
inputs. Adding an operation (a vision-tower step, say) is one row and one function; nothing else
changes. What the dump holds that no row can replay is listed, never silently skipped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.dumps.compare import ArrayDiff, Tolerance, compare_arrays
from weightfile.dumps.read import Dump

SCHEMA = "weightfile.replay/1"
EXACT = Tolerance()


@dataclass(frozen=True)
class ReplayOp:
    """One replayable operation: inputs -> run(model, {name: array}) -> {name: array}."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    run: str  # "module:attribute"
    profiles: tuple[str, ...]
    families: tuple[str, ...]
    what: str


#: The replay table. The board's Q8 MoE FFN (spec/numerics.md §board-moe) is its first row; the
#: board vision tower's steps (a block's input -> its LayerNorm -> q/k/v -> ...; the mergers) are
#: rows to come, in the vision packs' names.
ROWS: tuple[ReplayOp, ...] = (
    ReplayOp(
        name="moe.ffn",
        inputs=("moe.x_in",),
        outputs=(
            "moe.router_logits",
            "moe.experts",
            "moe.weights",
            "moe.gate",
            "moe.up",
            "moe.act",
            "moe.partial_sum",
            "moe.out",
            "moe.info_simd_mode8_rejected_ef",
        ),
        run="weightfile.replay_ops:board_moe_ffn",
        profiles=("kestrel-board",),
        families=("qwen3_moe",),
        what="the Q8 MoE FFN of every (layer, token) row of moe.x_in [L, N, d]",
    ),
)


@dataclass
class OpResult:
    """One row's verdict: replayed (arrays compared), or why not."""

    op: ReplayOp
    arrays: list[ArrayDiff] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # outputs we computed, absent in the dump
    skipped: str = ""  # why the row was not replayed ("" when it was)

    @property
    def equal(self) -> bool:
        return not self.skipped and bool(self.arrays) and all(d.ok for d in self.arrays)


@dataclass
class ReplayReport:
    """Every row's result and the dump arrays no row replays."""

    ops: list[OpResult]
    unreplayable: list[str]  # dump arrays no row takes or makes

    @property
    def replayed(self) -> list[OpResult]:
        return [r for r in self.ops if not r.skipped]

    @property
    def equal(self) -> bool:
        """Every replayed op equal, and at least one replayed (replaying nothing proves
        nothing)."""
        return bool(self.replayed) and all(r.equal for r in self.replayed)


def resolve(ref: str) -> Callable[..., dict[str, np.ndarray]]:
    """The function a row's "module:attribute" names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _why_not(op: ReplayOp, names: set[str], profile: str, family: str | None) -> str:
    """Why `op` cannot be replayed on this dump and model ("" when it can)."""
    missing = [n for n in op.inputs if n not in names]
    if missing:
        return f"input {', '.join(missing)} not in the dump"
    if profile not in op.profiles:
        return f"replayed under --profile {' or '.join(op.profiles)} only"
    if family not in op.families:
        return f"replayed on {' or '.join(op.families)} files only, not {family}"
    return ""


def replay(dump: Dump, model: Any, profile: str, family: str | None) -> ReplayReport:
    """spec/numerics.md §replay every row of ROWS that touches the dump: replayed when its
    inputs are there and it runs under this profile and family, listed with the reason when not."""
    names = set(dump.names)
    results = []
    for op in ROWS:
        if not names & (set(op.inputs) | set(op.outputs)):
            continue
        r = OpResult(op, skipped=_why_not(op, names, profile, family))
        if not r.skipped:
            ours = resolve(op.run)(model, {n: dump.array(n) for n in op.inputs})
            for name, value in ours.items():
                if name in names:
                    r.arrays.append(compare_arrays(name, value, dump.array(name), EXACT))
                else:
                    r.missing.append(name)
        results.append(r)
    touched = {n for op in ROWS for n in (*op.inputs, *op.outputs)}
    return ReplayReport(results, [n for n in dump.names if n not in touched])
