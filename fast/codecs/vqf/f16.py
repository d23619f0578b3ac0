"""Vectorised F16 codec and converters; must equal ref/codecs/vqf/f16.py bit for bit.

f16_rne is NumPy's float16 cast (IEEE RNE) plus the NaN rule of spec/vqf.md §f16-rne; the truncating
converter and the widening work on integer bit patterns. ref's all-integer rounding is what the
tests compare.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf.common import input_array, require_payload
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.errors import Violation

NAME = "f16"
_U32 = np.uint32


def f16_rne(bits: np.ndarray) -> np.ndarray:
    """f32 bits -> f16 bits, round to nearest even (spec/vqf.md §f16-rne; ref: f16.f16_rne).

    NumPy's float16 cast is IEEE RNE for every finite value and Inf; NaN payloads are replaced by
    the one quiet NaN of spec/vqf.md §f16-rne. The differential tests pin this to ref's integer
    rounding.
    """
    b = bits.astype(_U32, copy=False)
    with np.errstate(all="ignore"):
        h = b.view(np.float32).astype(np.float16).view(np.uint16)
    nan = (b & _U32(0x7FFFFFFF)) > _U32(0x7F800000)
    if nan.any():
        sign = ((b >> _U32(16)) & _U32(0x8000)).astype(np.uint16)
        h = np.where(nan, sign | np.uint16(0x7E00), h)
    return h


def f16_trunc_ftz(bits: np.ndarray) -> np.ndarray:
    """f32 bits -> f16 bits by truncation with flush to zero (spec/vqf.md §f16; ref:
    f16.f16_trunc_ftz)."""
    b = bits.astype(_U32, copy=False)
    sign = ((b >> _U32(16)) & _U32(0x8000)).astype(np.uint16)
    e = ((b >> _U32(23)) & _U32(0xFF)).astype(np.int64) - 112
    body = (np.clip(e, 0, 31) << 10) | ((b & _U32(0x7FFFFF)) >> _U32(13))
    h = np.where(e <= 0, 0, np.where(e >= 31, 0x7C00, body))
    return sign | h.astype(np.uint16)


def f16_to_f32(h: np.ndarray) -> np.ndarray:
    """Exact widening of f16 bits to float32 values (ref: f16.f16_to_f32_bits)."""
    h32 = h.astype(_U32)
    sign = (h32 & _U32(0x8000)) << _U32(16)
    e5 = (h32 >> _U32(10)) & _U32(0x1F)
    m = h32 & _U32(0x3FF)
    normal = ((e5 + _U32(112)) << _U32(23)) | (m << _U32(13))
    special = _U32(0x7F800000) | (m << _U32(13))
    # Subnormals (and zero): m · 2^-24 is exact in float32.
    small = (m.astype(np.float32) * np.float32(2.0**-24)).view(_U32)
    out = np.where(e5 == 0, small, np.where(e5 == 0x1F, special, normal))
    return (out | sign).view(np.float32)


def encode(values: object, rows: int, cols: int, *, mode: str = "rne") -> bytes:
    """F16 words in row-major order; mode "rne" (spec/vqf.md §f16-rne) or "trunc_ftz"
    (spec/vqf.md §f16)."""
    require_mode(NAME, mode)
    bits = input_array(NAME, values, rows, cols).view(_U32)
    convert = f16_rne if mode == "rne" else f16_trunc_ftz
    return convert(bits).astype("<u2").tobytes()


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The f16 bit patterns as uint16 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    return {"bits": np.frombuffer(payload, dtype="<u2").astype(np.uint16).reshape(rows, cols)}


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Exact widening of every f16 word to float32 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    return f16_to_f32(np.frombuffer(payload, dtype="<u2")).reshape(rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Every f16 word is a value, so only shape and length can be wrong."""
    return validate_length(NAME, payload, rows, cols)
