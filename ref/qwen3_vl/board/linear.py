"""The tower's Q8_0 linears on the engine's SDOT path (spec/numerics.md §board-vision-linear).

Per patch and 32-element input block the activation is quantized as the text path's is
(d = max(1e-10, amax)/127, codes trunc(x/d + 0.5) with the unrounded d), but the scale in the
product is d rounded to binary16. The integer block dot is split over four lanes; each lane
accumulates fl(float(D_lane) · fl(d_w · f16(d))) with a separate add, blocks ascending; the lanes
end as fl(fl(l0 + l2) + fl(l1 + l3)), then the bias is added.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board.quant import act_codes, act_scale, f16_round
from weightfile.spec.numerics.constants import QBLOCK

F32 = np.float32

#: Lane j's elements of a 32-element block: 4j..4j+3 of the first half, 16+4j..16+4j+3 of the
#: second (the SDOT instruction's lanes over two 16-byte loads).
LANES = tuple(np.r_[4 * j : 4 * j + 4, 16 + 4 * j : 16 + 4 * j + 4] for j in range(4))


def quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-vision-linear codes int64 [P, blocks, 32] and the f16-rounded scales
    float32 [P, blocks] of every row of x [P, k]."""
    p, k = x.shape
    if k % QBLOCK:
        raise ValueError(f"activation width {k} is not a multiple of {QBLOCK}")
    blocks = x.astype(F32).reshape(p, k // QBLOCK, QBLOCK)
    scales = np.array([[act_scale(b) for b in row] for row in blocks], F32).reshape(p, -1)
    codes = np.array(
        [
            [act_codes(b, d) for b, d in zip(row, ds, strict=True)]
            for row, ds in zip(blocks, scales, strict=True)
        ]
    ).reshape(p, k // QBLOCK, QBLOCK)
    return codes, f16_round(scales)


def q8_linear(m: QuantMatrix, bias: np.ndarray, x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-linear y = W x + b for every row of x [P, k]: [P, rows]."""
    codes, d16 = quantize_rows(x)
    rows, cols = m.shape
    if cols != x.shape[1]:
        raise ValueError(f"a [{rows}, {cols}] matrix applied to rows of {x.shape[1]}")
    wc = m.codes.astype(np.int64).reshape(rows, cols // QBLOCK, QBLOCK)
    dw = m.scale_bits.view(np.float16).astype(F32)  # [rows, blocks], exact
    acc = np.zeros((x.shape[0], rows, 4), F32)
    for blk in range(cols // QBLOCK):
        s = dw[None, :, blk] * d16[:, None, blk]  # [P, rows], one rounding
        for j, idx in enumerate(LANES):
            d = np.einsum("rk,pk->pr", wc[:, blk, idx], codes[:, blk, idx]).astype(F32)  # exact
            acc[..., j] = acc[..., j] + d * s
    y = (acc[..., 0] + acc[..., 2]) + (acc[..., 1] + acc[..., 3])
    return y + bias.astype(F32)
