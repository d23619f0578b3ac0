"""Weight matrices as the numerics sees them (spec/numerics.md §quantized-matmul).

A matrix is [rows (out), cols (in)], as Hugging Face linear weights and VQF per-layer matrices
are. It is either float32 values (F32, or F16 widened exactly) or the logical words of a
Q8_0 / Q4_0 tensor: one int8 code per element and one f16 scale (bits) per 32 columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.spec.numerics.constants import QBLOCK


@dataclass(frozen=True)
class DenseMatrix:
    """float32 values [rows, cols]."""

    values: np.ndarray  # float32 [rows, cols]

    def __post_init__(self) -> None:
        if self.values.dtype != np.float32 or self.values.ndim != 2:
            raise ValueError("DenseMatrix needs a 2-D float32 array")

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]


@dataclass(frozen=True)
class QuantMatrix:
    """Logical words of a block-quantized matrix: w[r,c] = codes[r,c] * f16(scale_bits[r,c//32])."""

    codes: np.ndarray  # int8 [rows, cols]; Q4_0 codes lie in [-8, 7]
    scale_bits: np.ndarray  # uint16 [rows, cols / 32], IEEE binary16 bit patterns

    def __post_init__(self) -> None:
        if self.codes.dtype != np.int8 or self.codes.ndim != 2:
            raise ValueError("QuantMatrix codes must be a 2-D int8 array")
        rows, cols = self.codes.shape
        if cols % QBLOCK or self.scale_bits.shape != (rows, cols // QBLOCK):
            raise ValueError(f"scale_bits must be uint16 [{rows}, {cols}/{QBLOCK}]")
        if self.scale_bits.dtype != np.uint16:
            raise ValueError("QuantMatrix scale_bits must be uint16")

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape  # type: ignore[return-value]


Matrix = DenseMatrix | QuantMatrix


@dataclass(frozen=True)
class HadamardMatrix:
    """A matrix whose input is rotated first: y = W · H(x), H the spec/numerics.md §hadamard
    transform with these signs (a `.ninfer` Use's hadamard_signs, spec/ninfer3.md §use). `matrix`
    holds the stored (rotated) weights."""

    matrix: Matrix
    signs: np.ndarray  # int8 [cols], every element +1 or −1

    def __post_init__(self) -> None:
        s, cols = self.signs, self.matrix.shape[1]
        if s.dtype != np.int8 or s.shape != (cols,) or not np.isin(s, (-1, 1)).all():
            raise ValueError(f"signs must be int8 ±1 [{self.matrix.shape[1]}]")

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape


@dataclass(frozen=True)
class RowStack:
    """Matrices read at one input, stacked by rows, each with its own product: y is the parts'
    outputs one after another. A fused projection whose parts carry different hadamard_signs
    (a `.ninfer` vision block's query, key and value, spec/ninfer3.md §qwen35-vision-names) is
    one; each output element is still the one dot of its row, so the bits are the parts'."""

    parts: tuple[Matrix | HadamardMatrix, ...]

    def __post_init__(self) -> None:
        if not self.parts or len({p.shape[1] for p in self.parts}) != 1:
            raise ValueError("a RowStack needs parts with one column count")

    @property
    def shape(self) -> tuple[int, int]:
        return sum(p.shape[0] for p in self.parts), self.parts[0].shape[1]
