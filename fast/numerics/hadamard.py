"""The Hadamard rotation of a Use's input, vectorised over tokens and blocks (spec/numerics.md
§hadamard).

Same float order as `weightfile.ref.numerics.hadamard`: every stage computes, for every pair
(i, i + h) with bit h of i clear, `a + b` and `a − b` as one float32 array operation each (one
IEEE rounding per element, no reassociation, no FMA possible: there is no multiply in a stage),
from the previous stage's values; the stages run in the same order (h = 1, 2, …, 512), the signs
before them (negation, exact) and the scale 2^−5 after them. Element for element these are the
reference's operations on the same operands, hence the same bits
(tests/differential/test_hadamard_fast_eq_ref.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from weightfile.ref.numerics.hadamard import SCALE
from weightfile.spec.numerics.constants import HADAMARD_BLOCK


def signs_array(signs: ArrayLike) -> np.ndarray:
    """±1 signs as a float32 array (multiplying by ±1.0 is exact: only the sign bit changes)."""
    s = np.asarray(signs)
    if s.ndim != 1 or s.size % HADAMARD_BLOCK or not np.isin(s, (-1, 1)).all():
        raise ValueError(f"signs must be a vector of ±1, a multiple of {HADAMARD_BLOCK} long")
    return s.astype(np.float32)


def hadamard_rows(x: ArrayLike, signs: ArrayLike) -> np.ndarray:
    """H applied to every row of X [T, K] (or one vector [K]), K a multiple of 1024; float32."""
    x = np.asarray(x, dtype=np.float32)
    s = signs_array(signs)
    if x.shape[-1] != s.size:
        raise ValueError(f"Hadamard of rows of {x.shape[-1]} elements with {s.size} signs")
    lead = x.shape[:-1]
    with np.errstate(over="ignore", invalid="ignore"):  # ±inf and NaN as IEEE gives them
        y = butterflies((x * s).reshape(-1, HADAMARD_BLOCK))  # one 1024-block per row
        return (y * SCALE).reshape(*lead, s.size)


def butterflies(y: np.ndarray) -> np.ndarray:
    """The ten unnormalised stages on each row of y [blocks, 1024], stride 1 first, in y's own
    float type (spec/numerics.md §hadamard): every stage one add and one subtract of the same
    operand pairs."""
    h = 1
    while h < HADAMARD_BLOCK:
        # [blocks, groups of 2h, (lower | upper) half, h]: the pairs (i, i + h) line up
        pairs = y.reshape(y.shape[0], -1, 2, h)
        a, b = pairs[:, :, 0, :], pairs[:, :, 1, :]
        y = np.stack((a + b, a - b), axis=2).reshape(y.shape)
        h *= 2
    return y


@dataclass(frozen=True)
class HadamardInput:
    """A matrix read at a Use with hadamard_signs: Y = H(s ∘ X) Wᵀ, every row's transform by
    `hadamard_rows`, then the stored (rotated) matrix's own product — what ref's HadamardMatrix
    computes (ref/numerics/kernels.py `matvec`), the same bits. `matrix` is any fast matrix with
    `shape` and `matmat(x, threads)` (a `.ninfer` NfMatrix, an F32 FastMatrix)."""

    matrix: Any
    signs: np.ndarray  # int8 [cols], ±1

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def matmat(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        rotated = np.ascontiguousarray(hadamard_rows(x, self.signs), dtype=np.float32)
        return self.matrix.matmat(rotated, threads)
