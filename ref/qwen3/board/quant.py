"""The board's three quantizers (spec/numerics.md §board-quantizers).

* activations of every quantized product: per 32-block, d = max(1e-10, amax)/127, code
  trunc(x/d + 0.5) clamped to ±127 (spec/numerics.md §board-activations);
* the decode attention query: per 32 elements, round half away from zero
  (spec/numerics.md §board-query);
* the INT8 KV cache: per token and kv head, floor(x·(127/amax) + 0.5)
  (spec/numerics.md §board-kv-cache).

Vectors are float32 arrays; every operation below is element-wise float32 with one rounding.
"""

from __future__ import annotations

import numpy as np

from weightfile.spec.numerics.constants import QBLOCK

F32 = np.float32
AMAX_FLOOR = F32(1e-10)
QMAX = F32(127.0)
HALF = F32(0.5)
INV127 = F32(1.0) / QMAX  # the constant 1/127 the attention scales multiply by
TINY = F32(1e-6)  # attention and KV: an amax below this is replaced by 1


def act_scale(block: np.ndarray) -> np.float32:
    """spec/numerics.md §board-activations d = max(1e-10, max|x|) / 127, one float32 division."""
    amax = max(AMAX_FLOOR, F32(np.max(np.abs(block))))
    return F32(amax / QMAX)


def act_codes(block: np.ndarray, d: np.float32) -> np.ndarray:
    """spec/numerics.md §board-activations q = clamp(trunc(fl(fl(x / d) + 0.5)), -127, 127),
    int64."""
    t = (block.astype(F32) / d).astype(F32) + HALF  # two roundings: the divide, the add
    return np.clip(np.trunc(t), -127, 127).astype(np.int64)


def quantize_act(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-activations codes int64 [blocks, 32] and scales float32 [blocks] of
    x."""
    if x.shape[0] % QBLOCK:
        raise ValueError(f"activation length {x.shape[0]} is not a multiple of {QBLOCK}")
    blocks = x.astype(F32).reshape(-1, QBLOCK)
    scales = np.array([act_scale(b) for b in blocks], dtype=F32)
    codes = np.stack([act_codes(b, d) for b, d in zip(blocks, scales, strict=True)])
    return codes, scales


def f16_round(d: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-activations a scale rounded to binary16 (nearest even, subnormals
    kept, overflow to inf) and widened back to float32 exactly: the prefill kernels' f16(d)."""
    return np.asarray(d, dtype=F32).astype(np.float16).astype(F32)


def _amax_or_one(v: np.ndarray) -> np.float32:
    a = F32(np.max(np.abs(v)))
    return F32(1.0) if a < TINY else a


def quantize_query(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-query one head's query: codes int64 [blocks, 32], scales float32
    [blocks] = amax·(1/127), codes = round-half-away(x·(127/amax)) in [-128, 127]."""
    blocks = q.astype(F32).reshape(-1, QBLOCK)
    codes, scales = [], []
    for b in blocks:
        qm = _amax_or_one(b)
        t = b * F32(QMAX / qm)
        # half away from zero, exactly: |t| + 0.5 in float64 is exact for float32 |t| >= 2**-29
        away = np.sign(t) * np.floor(np.abs(t).astype(np.float64) + 0.5)
        codes.append(np.clip(away, -128, 127).astype(np.int64))
        scales.append(F32(qm * INV127))
    return np.stack(codes), np.array(scales, dtype=F32)


def quantize_kv(v: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """spec/numerics.md §board-kv-cache one token's kv-head vector: int64 codes
    floor(fl(fl(x·(127/amax)) + 0.5)) in [-128, 127], and the dequantization scale
    amax·(1/127)."""
    a = _amax_or_one(v)
    t = (v.astype(F32) * F32(QMAX / a)).astype(F32) + HALF
    codes = np.clip(np.floor(t), -128, 127).astype(np.int64)
    return codes, F32(a * INV127)
