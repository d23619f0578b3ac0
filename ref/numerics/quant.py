"""Quantized weights meet float32 activations (spec/numerics.md §quantized-matmul).

Two modes, chosen by the profile's `quantized_matmul`:
* spec/numerics.md §q8-activation engine style: the activation vector is quantized per 32-block to
  Q8_0 codes, each block dot is an exact integer, and blocks are accumulated in ascending order in
  float32;
* spec/numerics.md §f32-weights float32 weights: each weight is reconstructed exactly as code *
  scale and the dense dot of spec/numerics.md §lanes8-tree is used.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.spec.numerics.constants import ACT_QMAX, QBLOCK

from .f32 import F32, ZERO, f16_bits_to_f32
from .matrix import QuantMatrix
from .reduce import dot

QMAX = F32(ACT_QMAX)


def activation_scale(block: Sequence[np.float32]) -> np.float32:
    """spec/numerics.md §q8-activation step 1: d = amax / 127 (one division), amax NaN if any
    element is NaN."""
    amax = ZERO
    for x in block:
        a = abs(x)
        if a > amax or a != a:
            amax = a
    with np.errstate(invalid="ignore"):  # a signalling NaN's division flags invalid: NaN is meant
        return amax / QMAX


def activation_codes(block: Sequence[np.float32], d: np.float32) -> list[int]:
    """spec/numerics.md §q8-activation step 2: q = clamp(rint(x / d), -127, 127), ties to even; all
    0 unless 0 < d < inf."""
    if not (d > ZERO and np.isfinite(d)):
        return [0] * len(block)
    return [max(-ACT_QMAX, min(ACT_QMAX, int(np.rint(x / d)))) for x in block]


def quantize_activation(x: Sequence[np.float32]) -> tuple[list[list[int]], list[np.float32]]:
    """spec/numerics.md §q8-activation Quantize a vector per 32-block: (codes per block, d per
    block)."""
    if len(x) % QBLOCK:
        raise ValueError(f"activation length {len(x)} is not a multiple of {QBLOCK}")
    codes, scales = [], []
    for start in range(0, len(x), QBLOCK):
        block = x[start : start + QBLOCK]
        d = activation_scale(block)
        codes.append(activation_codes(block, d))
        scales.append(d)
    return codes, scales


def block_dot(w_codes: Sequence[int], x_codes: Sequence[int]) -> int:
    """spec/numerics.md §q8-activation step 3: the exact integer dot of one block (|D| <= 32*128*127
    < 2**24)."""
    return sum(w * q for w, q in zip(w_codes, x_codes, strict=True))


def row_dot_q8_activation(
    m: QuantMatrix, row: int, x_codes: list[list[int]], x_scales: list[np.float32]
) -> np.float32:
    """spec/numerics.md §q8-activation step 4: acc += float(D_b) * (d_w * d_x) over blocks b
    ascending, from +0.0."""
    acc = ZERO
    w_scales = m.scale_bits[row].tolist()
    for b, (codes, d_x) in enumerate(zip(x_codes, x_scales, strict=True)):
        w_codes = m.codes[row, b * QBLOCK : (b + 1) * QBLOCK].tolist()
        s = f16_bits_to_f32(w_scales[b]) * d_x
        acc = acc + F32(block_dot(w_codes, codes)) * s
    return acc


def matvec_q8_activation(m: QuantMatrix, x: Sequence[np.float32]) -> list[np.float32]:
    """spec/numerics.md §q8-activation y[r] for every row, the activation quantized once and shared
    by all rows."""
    x_codes, x_scales = quantize_activation(x)
    return [row_dot_q8_activation(m, r, x_codes, x_scales) for r in range(m.shape[0])]


def reconstruct_row(m: QuantMatrix, row: int) -> list[np.float32]:
    """spec/numerics.md §f32-weights w = float32(code) * float32(f16 scale); exact (at most 8 + 11
    significant bits)."""
    scales = [f16_bits_to_f32(bits) for bits in m.scale_bits[row].tolist()]
    return [F32(code) * scales[c // QBLOCK] for c, code in enumerate(m.codes[row].tolist())]


def matvec_f32_weights(m: QuantMatrix, x: Sequence[np.float32]) -> list[np.float32]:
    """spec/numerics.md §f32-weights y[r] = dot(reconstructed row r, x) in the order of
    spec/numerics.md §lanes8-tree."""
    return [dot(reconstruct_row(m, r), x) for r in range(m.shape[0])]
