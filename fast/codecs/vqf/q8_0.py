"""Vectorised Q8_0 (spec/vqf.md §q8-0, §quant-q8-0, §f16-rne, §vs-ggml); must equal
ref/codecs/vqf/q8_0.py bit for bit.

Every float step is the same float32 operation as in ref, applied element-wise (never a reduction
whose order matters: max is exact in any order).
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf import _native
from weightfile.fast.codecs.vqf.common import (
    F32,
    Found,
    chunks,
    each,
    in_ref_order,
    input_array,
    padded_blocks,
    require_finite,
    require_payload,
    saturate,
    scales_shape,
)
from weightfile.fast.codecs.vqf.f16 import f16_rne, f16_to_f32, f16_trunc_ftz
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import Violation

NAME = "q8_0"
BLOCK_BYTES = 2 + QK
FLOOR = F32(1e-10)


def kestrel_scale(a: np.ndarray) -> np.ndarray:
    """Per row of |x|: amax = max(1e-10, max|x|), scale = amax/127 floored at 1e-10
    (spec/vqf.md §quant-q8-0)."""
    scale = np.maximum(a.max(axis=1), FLOOR) / F32(127)
    return np.maximum(scale, FLOOR, out=scale)  # = "if scale < 1e-10: scale = 1e-10"


def quantize_kestrel(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/vqf.md §quant-q8-0 over each row of x: f16_RNE(scale); trunc(x·r ± 0.5) with r =
    1/scale; ±127.

    Worked on magnitudes: |x|·r = |x·r| exactly, and (-v) - 0.5 = -(v + 0.5) exactly, so
    trunc(x·r ± 0.5) = sign(x)·trunc(|x|·r + 0.5); the sign goes back on before the truncation.
    """
    a = np.abs(x)
    scale = kestrel_scale(a)
    np.multiply(a, (F32(1) / scale)[:, None], out=a)
    a += F32(0.5)
    np.minimum(a, F32(127), out=a)  # the ±127 clamp (never active: |x·r| <= 127·(1 + 3·2^-24))
    np.copysign(a, x, out=a)
    return f16_rne(scale.view(np.uint32)), a.astype(np.int8)


def quantize_kestrel_legacy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/vqf.md §f16-rne: truncating FTZ f16 scale; trunc(x/scale + 0.5), clamped to ±127."""
    scale = kestrel_scale(np.abs(x))
    v = x / scale[:, None] + F32(0.5)
    return f16_trunc_ftz(scale.view(np.uint32)), np.clip(v, -127, 127).astype(np.int8)


def ggml_round(v: np.ndarray) -> np.ndarray:
    """C roundf element-wise, exactly: trunc(|v|) plus one when the fraction is >= 0.5."""
    a = np.abs(v)
    t = np.trunc(a)
    with np.errstate(invalid="ignore"):
        t += (a - t >= F32(0.5)).astype(np.float32)
    return np.copysign(t, v)


def quantize_ggml(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ggml quantize_row_q8_0_ref: d = amax/127, id = 1/d or 0, roundf(x·id) (spec/vqf.md
    §vs-ggml)."""
    d = np.abs(x).max(axis=1) / F32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, F32(1) / d, F32(0))
    with np.errstate(invalid="ignore"):
        v = ggml_round(x * inv[:, None])
    return f16_rne(d.view(np.uint32)), saturate(v, -127, 127, np.int8)


QUANTIZERS = {
    "kestrel": quantize_kestrel,
    "kestrel_legacy": quantize_kestrel_legacy,
    "ggml": quantize_ggml,
}


def store(out: np.ndarray, d: np.ndarray, codes: np.ndarray) -> None:
    """Fill [n, 34] uint8 blocks: d (u16 LE) then the 32 int8 codes (spec/vqf.md §q8-0)."""
    out[:, :2] = d.astype("<u2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = codes.view(np.uint8)


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Quantise row-major float32 values block by block with the chosen quantiser."""
    require_mode(NAME, mode)
    x = input_array(NAME, values, rows, cols)
    blocks = padded_blocks(x, QK)
    quantize = QUANTIZERS[mode]
    out = np.empty((blocks.shape[0], BLOCK_BYTES), dtype=np.uint8)
    native = _native.lib()
    if native is not None:
        if native.vqf_q8_0_quantize(blocks, blocks.shape[0], QK, _native.MODES[mode], out):
            require_finite(NAME, x, cols)  # the kernel saw NaN/Inf: raise ref's error
        return out.tobytes()
    require_finite(NAME, x, cols)
    with np.errstate(all="ignore"):
        for s in chunks(blocks.shape[0]):
            store(out[s], *quantize(blocks[s]))
    return out.tobytes()


def split(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Scale bits uint16 [n] and codes int8 [n, 32] of a length-checked payload."""
    raw = np.frombuffer(payload, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
    d = raw[:, :2].copy().view("<u2").reshape(-1).astype(np.uint16)
    return d, raw[:, 2:].view(np.int8)


def words(d: np.ndarray, codes: np.ndarray, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] (padding dropped) and scales uint16 (ref: words_of_blocks)."""
    return {
        "codes": codes.reshape(-1)[: rows * cols].reshape(rows, cols).copy(),
        "scales": d.reshape(scales_shape(rows, cols, d.size)).copy(),
    }


def values(d: np.ndarray, codes: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """value = code · d, one f32 multiply per element (spec/vqf.md §q8-0)."""
    out = np.empty(codes.shape, dtype=np.float32)
    with np.errstate(all="ignore"):
        for s in chunks(d.size):
            np.multiply(codes[s].astype(np.float32), f16_to_f32(d[s])[:, None], out=out[s])
    return out.reshape(-1)[: rows * cols].reshape(rows, cols)


def payload_values(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """value = code · d for a length-checked payload of 34 B blocks (C kernel or NumPy)."""
    native = _native.lib()
    if native is None:
        return values(*split(payload), rows, cols)
    nb = len(payload) // BLOCK_BYTES
    out = np.empty(nb * QK, dtype=np.float32)
    native.vqf_q8_0_dequantize(np.frombuffer(payload, dtype=np.uint8), nb, out)
    return out[: rows * cols].reshape(rows, cols)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical codes and scales of a Q8_0 payload."""
    return words(*split(require_payload(NAME, payload, rows, cols)), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] values of a Q8_0 payload."""
    return payload_values(require_payload(NAME, payload, rows, cols), rows, cols)


def scale_found(
    name: str, d: np.ndarray, *, signed: bool, block_bytes: int = BLOCK_BYTES
) -> list[Found]:
    """Non-finite (and, unless `signed`, negative) scales (ref: q8_0.scale_violations)."""
    found = []
    bad = (d & 0x7C00) == 0x7C00
    for (i,) in each(bad):
        v = Violation(rule(name, "scale_finite"), "scale is NaN or Inf", i * block_bytes, "d")
        found.append(Found(i, 0, 0, v))
    if not signed:
        for (i,) in each(~bad & ((d & 0x8000) != 0)):
            v = Violation(rule(name, "scale_sign"), "scale is negative", i * block_bytes, "d")
            found.append(Found(i, 0, 0, v))
    return found


def code_found(name: str, codes: np.ndarray, lo: int, hi: int, n: int, rank: int) -> list[Found]:
    """Codes outside [lo, hi]; padding codes past element n not 0 (ref: q8_0.code_violations)."""
    index = np.arange(codes.size).reshape(codes.shape)
    padding = index >= n
    found = []
    for i, j in each(padding & (codes != 0)):
        v = Violation(rule(name, "padding"), "padding code is not 0", i * BLOCK_BYTES + 2 + j)
        found.append(Found(i, rank, j, v))
    for i, j in each(~padding & ((codes < lo) | (codes > hi))):
        v = Violation(
            rule(name, "code_domain"),
            f"code {int(codes[i, j])} outside [{lo}, {hi}]",
            i * BLOCK_BYTES + 2 + j,
        )
        found.append(Found(i, rank, j, v))
    return found


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite non-negative scale, codes in [-127, 127], zero padding codes."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    d, codes = split(bytes(payload))
    n = rows * cols
    return in_ref_order(
        scale_found(NAME, d, signed=False) + code_found(NAME, codes, -127, 127, n, 1)
    )
