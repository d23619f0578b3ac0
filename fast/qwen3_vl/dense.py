"""The fast vision tower on float32 matrices held in memory: the decoded weights of a `.ninfer`
vision component (spec/ninfer3.md §qwen35-vision-names), bit for bit the reference tower on the
same `DenseMatrix` records (spec/numerics.md §vision: F32 weights take the spec/numerics.md
§matmul dot in both); a matrix whose Use has hadamard_signs rotates its input first
(spec/numerics.md §hadamard, fast/numerics/hadamard.py `HadamardInput`).

`fast_tower(config, weights, threads)` is the entry point a fast Qwen3.5 text decoder calls for
its images, as weightfile/frontend/ninfer_session.py does with the reference text model.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from weightfile.fast.numerics.hadamard import HadamardInput
from weightfile.fast.numerics.matrix import FastMatrix
from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix, RowStack
from weightfile.ref.qwen3_vl.config import VisionConfig, VisionWeights

from .vision import FastVisionTower


def fast_matrix(m: DenseMatrix) -> FastMatrix:
    """An F32 FastMatrix reading the DenseMatrix's own float32 bytes (no copy)."""
    values = np.ascontiguousarray(m.values, dtype=np.float32)
    rows, cols = values.shape
    return FastMatrix("f32", values.reshape(-1).view(np.uint8), rows, cols)


@dataclass(frozen=True)
class FastRowStack:
    """ref's RowStack (parts stacked by rows, each its own product) on [T, cols] activations:
    the parts' outputs side by side, each element its row's one product, so the same bits."""

    parts: tuple[Any, ...]

    @property
    def shape(self) -> tuple[int, int]:
        return sum(p.shape[0] for p in self.parts), self.parts[0].shape[1]

    def matmat(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        return np.concatenate([p.matmat(x, threads) for p in self.parts], axis=1)


def fast_linear(m: DenseMatrix | HadamardMatrix | RowStack) -> Any:
    """The fast product of one reference tower linear: an F32 FastMatrix, a HadamardInput around
    one (W · H(x), spec/numerics.md §hadamard), or a FastRowStack of those."""
    if isinstance(m, RowStack):
        return FastRowStack(tuple(fast_linear(p) for p in m.parts))
    if isinstance(m, HadamardMatrix):
        return HadamardInput(fast_linear(m.matrix), m.signs)
    return fast_matrix(m)


def as_fast(record: Any) -> Any:
    """The record with every reference linear a fast one (nested records and tuples too)."""
    changes = {}
    for f in fields(record):
        v = getattr(record, f.name)
        if isinstance(v, DenseMatrix | HadamardMatrix | RowStack):
            changes[f.name] = fast_linear(v)
        elif isinstance(v, tuple):
            changes[f.name] = tuple(as_fast(x) for x in v)
        elif hasattr(v, "__dataclass_fields__"):
            changes[f.name] = as_fast(v)
    return replace(record, **changes)


def fast_tower(config: VisionConfig, weights: VisionWeights, threads: int = 1) -> FastVisionTower:
    """The fast tower on the reference tower's weight records (spec/models.md §qwen35-vision)."""
    return FastVisionTower(config, as_fast(weights), threads)
