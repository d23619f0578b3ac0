"""Vectorised Q4_0 (spec/vqf.md §q4-0, §quant-q4-0, §f16-rne, §vs-ggml); must equal
ref/codecs/vqf/q4_0.py bit for bit."""

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
    scales_shape,
)
from weightfile.fast.codecs.vqf.f16 import f16_rne, f16_to_f32, f16_trunc_ftz
from weightfile.fast.codecs.vqf.q8_0 import scale_found
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import Violation

NAME = "q4_0"
BLOCK_BYTES = 2 + QK // 2
ZERO_BLOCK_D = 0x3C00

# (nibble - 8) as float32 for the low and the high nibble of every byte value.
_LOW = ((np.arange(256) & 0x0F) - 8).astype(np.float32)
_HIGH = ((np.arange(256) >> 4) - 8).astype(np.float32)


def signed_max(x: np.ndarray) -> np.ndarray:
    """Per row: the first value with the strictly largest |x|; +0.0 for an all-zero row
    (spec/vqf.md §quant-q4-0)."""
    first = np.abs(x).argmax(axis=1)  # argmax returns the first of equal maxima
    maxv = x[np.arange(x.shape[0]), first]
    return np.where(maxv == 0, F32(0), maxv)  # -0.0 never beats the starting +0.0


def nibbles(x: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """trunc(x·id + 8.5) clamped to [0, 15]; NaN -> 0 (ref: q4_0.nibble)."""
    v = x * inv[:, None]
    v += F32(8.5)
    # NaN and anything below 0 give 0, +Inf and anything above 15 give 15; astype truncates.
    return np.minimum(np.where(v >= 0, v, F32(0)), F32(15)).astype(np.uint8)


def quantize_kestrel(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/vqf.md §quant-q4-0: d = maxv/-8, 1.0 when zero, id = 1/d, f16_RNE(d)."""
    d = signed_max(x) / F32(-8)
    d = np.where(d == 0, F32(1), d)
    return f16_rne(d.view(np.uint32)), nibbles(x, F32(1) / d)


def quantize_kestrel_legacy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/vqf.md §f16-rne: as spec/vqf.md §quant-q4-0 with the truncating FTZ f16."""
    d = signed_max(x) / F32(-8)
    d = np.where(d == 0, F32(1), d)
    return f16_trunc_ftz(d.view(np.uint32)), nibbles(x, F32(1) / d)


def quantize_ggml(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ggml quantize_row_q4_0_ref: d = max/-8, id = 0 when d == 0 (spec/vqf.md §vs-ggml)."""
    d = signed_max(x) / F32(-8)
    inv = np.where(d != 0, F32(1) / np.where(d != 0, d, F32(1)), F32(0))
    return f16_rne(d.view(np.uint32)), nibbles(x, inv)


QUANTIZERS = {
    "kestrel": quantize_kestrel,
    "kestrel_legacy": quantize_kestrel_legacy,
    "ggml": quantize_ggml,
}


def store(out: np.ndarray, d: np.ndarray, q: np.ndarray) -> None:
    """Fill [n, 18] uint8 blocks: d, then byte j = element j | element j+16 << 4
    (spec/vqf.md §q4-0)."""
    out[:, :2] = d.astype("<u2").view(np.uint8).reshape(-1, 2)
    np.left_shift(q[:, 16:], 4, out=out[:, 2:])
    out[:, 2:] |= q[:, :16]


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Quantise row-major float32 values block by block with the chosen quantiser."""
    require_mode(NAME, mode)
    x = input_array(NAME, values, rows, cols)
    blocks = padded_blocks(x, QK)
    quantize = QUANTIZERS[mode]
    out = np.empty((blocks.shape[0], BLOCK_BYTES), dtype=np.uint8)
    native = _native.lib()
    if native is not None:
        if native.vqf_q4_0_quantize(blocks, blocks.shape[0], _native.MODES[mode], 0, out):
            require_finite(NAME, x, cols)  # the kernel saw NaN/Inf: raise ref's error
        return out.tobytes()
    require_finite(NAME, x, cols)
    with np.errstate(all="ignore"):
        for s in chunks(blocks.shape[0]):
            store(out[s], *quantize(blocks[s]))
    return out.tobytes()


def split(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Scale bits uint16 [n] and qs bytes uint8 [n, 16] of a length-checked payload."""
    raw = np.frombuffer(payload, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
    d = raw[:, :2].copy().view("<u2").reshape(-1).astype(np.uint16)
    return d, raw[:, 2:]


def unpacked(qs: np.ndarray) -> np.ndarray:
    """The 32 nibbles of each block in element order, uint8 [n, 32]."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Nibbles uint8 [rows, cols] (value = (code - 8)·d) and scales uint16."""
    d, qs = split(require_payload(NAME, payload, rows, cols))
    return {
        "codes": unpacked(qs).reshape(-1)[: rows * cols].reshape(rows, cols),
        "scales": d.reshape(scales_shape(rows, cols, d.size)),
    }


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols]: value = (nibble - 8) · d, one f32 multiply per element
    (spec/vqf.md §q4-0)."""
    payload = require_payload(NAME, payload, rows, cols)
    native = _native.lib()
    if native is not None:
        nb = len(payload) // BLOCK_BYTES
        flat = np.empty(nb * QK, dtype=np.float32)
        native.vqf_q4_0_dequantize(np.frombuffer(payload, dtype=np.uint8), nb, flat)
        return flat[: rows * cols].reshape(rows, cols)
    d, qs = split(payload)
    out = np.empty((d.size, QK), dtype=np.float32)
    with np.errstate(all="ignore"):
        for s in chunks(d.size):
            scale = f16_to_f32(d[s])[:, None]
            np.multiply(_LOW[qs[s]], scale, out=out[s, :16])
            np.multiply(_HIGH[qs[s]], scale, out=out[s, 16:])
    return out.reshape(-1)[: rows * cols].reshape(rows, cols)


def zero_block_found(
    name: str, d: np.ndarray, codes: np.ndarray, zero: int, rank: int, block_bytes: int
) -> list[Found]:
    """All-zero-code blocks stored with d != 1.0 (ref: q4_0.zero_block_violations)."""
    bad = np.all(codes == zero, axis=1) & (d != ZERO_BLOCK_D)
    return [
        Found(
            i,
            rank,
            0,
            Violation(
                rule(name, "zero_block"),
                "all-zero block must have d = 0x3c00",
                i * block_bytes,
                "d",
            ),
        )
        for (i,) in each(bad)
    ]


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite scale, the zero-block rule, padding nibbles equal to 8."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    d, qs = split(bytes(payload))
    q = unpacked(qs)
    found_ = scale_found(NAME, d, signed=True, block_bytes=BLOCK_BYTES)
    found_ += zero_block_found(NAME, d, q, 8, 1, BLOCK_BYTES)
    index = np.arange(q.size).reshape(q.shape)
    for i, j in each((index >= rows * cols) & (q != 8)):
        v = Violation(
            rule(NAME, "padding"), "padding nibble is not 8", i * BLOCK_BYTES + 2 + j % 16
        )
        found_.append(Found(i, 2, j, v))
    return in_ref_order(found_)
