"""The board's Q4_0 / Q8_0 products, one function per kernel form (spec/numerics.md
§board-products).

Every form starts from the activation codes and scales of `quant.quantize_act` and the weight's
logical words (`QuantMatrix`: int8 codes, f16 scale bits per 32 columns). The integer block
dots are exact (|D| < 2**24), so they are taken with an integer product; the float32 chains
over blocks are written out, ascending, one output row per array lane (rows are independent).
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.spec.numerics.constants import QBLOCK

from .fma import fma_f32
from .quant import f16_round

F32 = np.float32
HALF_BLOCK = QBLOCK // 2


def weight_scales(m: QuantMatrix) -> np.ndarray:
    """d_w float32 [rows, blocks]: the f16 scales widened exactly."""
    return m.scale_bits.view(np.float16).astype(F32)


def block_dots(m: QuantMatrix, codes: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Exact integer dots over elements lo..hi-1 of every block: float32 [rows, blocks]."""
    rows, cols = m.shape
    w = m.codes.astype(np.int64).reshape(rows, cols // QBLOCK, QBLOCK)[:, :, lo:hi]
    d = np.einsum("rbk,bk->rb", w, codes[:, lo:hi])  # integers: exact in any order
    return d.astype(F32)  # |D| < 2**24: exact


def q4_decode(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-q4-decode Q4 decode (C tile): s = fl(d_w·d_x); lo and hi FMA chains
    over the two 16-element halves of each block, ascending; y = fl(lo + hi). [rows]"""
    s = weight_scales(m) * d_x[None, :]  # [rows, blocks], one rounding each
    d_lo = block_dots(m, codes, 0, HALF_BLOCK)
    d_hi = block_dots(m, codes, HALF_BLOCK, QBLOCK)
    lo = np.zeros(m.shape[0], dtype=F32)
    hi = np.zeros(m.shape[0], dtype=F32)
    for b in range(s.shape[1]):
        lo = fma_f32(d_lo[:, b], s[:, b], lo)
        hi = fma_f32(d_hi[:, b], s[:, b], hi)
    return lo + hi


def single_chain(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-one-chain one FMA chain per row over the full 32-element block dots:
    acc = fma(D_b, fl(d_w·d_x), acc), ascending. The Q4 lm_head (both phases), Q8 decode and
    the Q8 lm_head; with d_x rounded to f16 first, the Q4 prefill GEMM (spec/numerics.md
    §board-q4-prefill). [rows]"""
    s = weight_scales(m) * d_x[None, :]
    d = block_dots(m, codes, 0, QBLOCK)
    acc = np.zeros(m.shape[0], dtype=F32)
    for b in range(s.shape[1]):
        acc = fma_f32(d[:, b], s[:, b], acc)
    return acc


def q4_prefill_gemm(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-q4-prefill Q4 prefill GEMM (tokens before n & ~3): the single chain
    with the activation scales rounded to f16. [rows]"""
    return single_chain(m, codes, f16_round(d_x))


def q8_prefill_gemm(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-q8-prefill Q8 prefill GEMM: acc = fl(acc + fl(fl(d_w·f16(d_x))·D)),
    unfused, ascending blocks. [rows]"""
    s = weight_scales(m) * f16_round(d_x)[None, :]
    d = block_dots(m, codes, 0, QBLOCK)
    acc = np.zeros(m.shape[0], dtype=F32)
    for b in range(s.shape[1]):
        acc = acc + s[:, b] * d[:, b]
    return acc
