"""F16 (qtype 0x05, token_embed): IEEE binary16 LE words (spec/vqf.md §f16, §f16-rne).

Also the two f32 -> f16 converters every quantiser stores its scale with: `f16_rne`
(spec/vqf.md §f16-rne, the current converter, equal to ggml's GGML_FP32_TO_FP16) and `f16_trunc_ftz`
(spec/vqf.md §f16, the truncating, flush-to-zero converter of the token_embed writer and of older
engine builds), and the exact widening `f16_to_f32_bits` every decoder uses. All three work on bit
patterns with Python integers.
"""

from __future__ import annotations

import struct

import numpy as np

from weightfile.ref.codecs.vqf.common import (
    input_bits,
    require_mode,
    require_payload,
    validate_length,
    values_from_bits,
)
from weightfile.spec.errors import Violation

NAME = "f16"


def _round_half_even_shift(n: int, s: int) -> int:
    """n · 2^-s rounded to the nearest integer, ties to even (exact integer arithmetic)."""
    if s <= 0:
        return n << -s
    q, r, half = n >> s, n & ((1 << s) - 1), 1 << (s - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q


def f16_rne(f32_bits: int) -> int:
    """Round an f32 (given as bits) to the nearest f16, ties to even (spec/vqf.md §f16-rne)."""
    f32_bits = int(f32_bits)
    sign = (f32_bits >> 16) & 0x8000
    e8 = (f32_bits >> 23) & 0xFF
    m23 = f32_bits & 0x7FFFFF
    if e8 == 0xFF:  # NaN -> sign | 0x7E00 (one quiet NaN); Inf stays Inf
        return sign | (0x7E00 if m23 else 0x7C00)
    # Value = mant · 2^(exp2 - 23) with the hidden bit made explicit for normal numbers.
    mant, exp2 = (m23 | 0x800000, e8 - 127) if e8 else (m23, -126)
    # f16 spacing at this magnitude: 2^(max(exp2, -14) - 10); below 2^-14 the subnormal 2^-24.
    quantum_exp = max(exp2, -14) - 10
    q = _round_half_even_shift(mant, quantum_exp - (exp2 - 23))
    if quantum_exp == -24:  # subnormal range: q counts 2^-24 units (q = 1024 is 0x0400, min normal)
        return sign | q
    biased = quantum_exp + 10 + 15
    h = (biased << 10) + (q - 1024)  # q in [1024, 2048]; 2048 carries into the exponent
    return sign | (0x7C00 if h >= 0x7C00 else h)


def f16_trunc_ftz(f32_bits: int) -> int:
    """The truncating, flush-to-zero f32 -> f16 of spec/vqf.md §f16, step by step."""
    f32_bits = int(f32_bits)
    sign = (f32_bits >> 16) & 0x8000  # sign -> bit 15
    e = ((f32_bits >> 23) & 0xFF) - 112  # e = exp8 - 112
    if e <= 0:
        return sign  # no subnormals: +-0
    if e >= 31:
        return sign | 0x7C00  # +-Inf, NaN included
    return sign | (e << 10) | ((f32_bits & 0x7FFFFF) >> 13)  # mantissa truncated toward zero


def f16_to_f32_bits(h: int) -> int:
    """Widen f16 bits to f32 bits exactly: subnormals, Inf and NaN payloads included
    (spec/vqf.md §f16)."""
    h = int(h)
    sign = (h & 0x8000) << 16
    e5 = (h >> 10) & 0x1F
    m10 = h & 0x3FF
    if e5 == 0x1F:
        return sign | 0x7F800000 | (m10 << 13)
    if e5 != 0:
        return sign | ((e5 - 15 + 127) << 23) | (m10 << 13)
    if m10 == 0:
        return sign
    # Subnormal m10 · 2^-24: shift the leading 1 up to the hidden-bit position.
    e = -14
    while not m10 & 0x400:
        m10 <<= 1
        e -= 1
    return sign | ((e + 127) << 23) | ((m10 & 0x3FF) << 13)


def encode(values: object, rows: int, cols: int, *, mode: str = "rne") -> bytes:
    """F16 words in row-major order; mode "rne" (spec/vqf.md §f16-rne) or "trunc_ftz"
    (spec/vqf.md §f16)."""
    require_mode(NAME, mode)
    convert = f16_rne if mode == "rne" else f16_trunc_ftz
    bits = input_bits(NAME, values, rows, cols)
    return b"".join(struct.pack("<H", convert(b)) for b in bits)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The f16 bit patterns as uint16 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    words = [w for (w,) in struct.iter_unpack("<H", payload)]
    return {"bits": np.array(words, dtype=np.uint16).reshape(rows, cols)}


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Exact widening of every f16 word to float32 [rows, cols]."""
    payload = require_payload(NAME, payload, rows, cols)
    bits = [f16_to_f32_bits(w) for (w,) in struct.iter_unpack("<H", payload)]
    return values_from_bits(bits, rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Every f16 word is a value, so only shape and length can be wrong."""
    return validate_length(NAME, payload, rows, cols)
