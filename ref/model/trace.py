"""Trace hook: every operation's output, per token, under stable names (spec/numerics.md §10).

Names (T = tokens of the call; L = layer index):
  embed [T, hidden]
  layers.L.{attn_norm, o_proj, attn_residual, ffn_norm, down_proj, ffn_residual} [T, hidden]
  layers.L.{q_proj, q_norm, q_rope, attn} [T, heads*head_dim]
  layers.L.{k_proj, k_norm, k_rope, v_proj} [T, kv_heads*head_dim]
  layers.L.{gate_proj, up_proj, swiglu} [T, intermediate]
  final_norm [T, hidden]
  logits [T, vocab]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: A trace hook receives (name, float32 array [T, width]) once per operation per forward call.
TraceHook = Callable[[str, np.ndarray], None]

LAYER_OPS = (
    "attn_norm",
    "q_proj",
    "k_proj",
    "v_proj",
    "q_norm",
    "k_norm",
    "q_rope",
    "k_rope",
    "attn",
    "o_proj",
    "attn_residual",
    "ffn_norm",
    "gate_proj",
    "up_proj",
    "swiglu",
    "down_proj",
    "ffn_residual",
)


def trace_names(num_layers: int) -> list[str]:
    """Every name a forward pass records, in the order it records them."""
    names = ["embed"]
    for layer in range(num_layers):
        names += [f"layers.{layer}.{op}" for op in LAYER_OPS]
    return [*names, "final_norm", "logits"]


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
