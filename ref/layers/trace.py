"""The trace hook: every operation's output, per token, under stable names (spec/models.md
§qwen3-forward).

A family's trace-name table (its `trace.py`) lists the operations of each block in the order
they are recorded; the blocks hand their outputs to `emit`, which records them under
`layers.L.<op>` in the table's order, so the names are written once, in the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

#: A trace hook receives (name, float32 array [T, width]) once per operation per forward call.
TraceHook = Callable[[str, np.ndarray], None]

#: The names outside the layers, shared by every family
#: (spec/models.md §qwen3-forward, §qwen35-trace).
EMBED = "embed"
FINAL_NORM = "final_norm"
LOGITS = "logits"


def layer_name(layer: int, op: str) -> str:
    """The trace name of operation `op` in layer `layer`: layers.L.op."""
    return f"layers.{layer}.{op}"


def emit(hook: Callable[[str, Any], None], layer: int, ops: Sequence[str], rows: Mapping) -> None:
    """Record one block's outputs: hook(layers.L.op, rows[op]) for every op of the table, in the
    table's order; the block must produce exactly the table's operations."""
    assert set(rows) == set(ops), f"block outputs {sorted(rows)} != trace table {sorted(ops)}"
    for op in ops:
        hook(layer_name(layer, op), rows[op])


def model_names(layer_ops: Sequence[Sequence[str]]) -> list[str]:
    """Every name a forward pass records, in order: embed, each layer's ops, final_norm, logits."""
    names = [EMBED]
    for layer, ops in enumerate(layer_ops):
        names += [layer_name(layer, op) for op in ops]
    return [*names, FINAL_NORM, LOGITS]


class TraceRecorder:
    """A TraceHook that keeps every array and joins calls along the token axis."""

    def __init__(self) -> None:
        self._parts: dict[str, list[np.ndarray]] = {}

    def __call__(self, name: str, rows: np.ndarray) -> None:
        self._parts.setdefault(name, []).append(np.array(rows, dtype=np.float32))

    def arrays(self) -> dict[str, np.ndarray]:
        """name -> float32 [all tokens so far, width]."""
        return {k: np.concatenate(v, axis=0) for k, v in self._parts.items()}


def as_rows(vectors: Sequence[Sequence[np.float32]]) -> np.ndarray:
    """Per-token vectors to a float32 [T, width] array (no arithmetic)."""
    return np.array([list(v) for v in vectors], dtype=np.float32)
