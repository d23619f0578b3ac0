"""Q4_0 legacy (qtype 0x03): 18 B blocks: f16 scale, 16 nibble-pair bytes (spec/vqf.md §q4-0,
§quant-q4-0).

Encoder modes: "kestrel" (spec/vqf.md §quant-q4-0: the all-zero block is stored with d = 1.0),
"kestrel_legacy" (spec/vqf.md §f16-rne: the same with the truncating FTZ f16), "ggml"
(quantize_row_q4_0_ref: d = 0 for all-zero blocks, spec/vqf.md §vs-ggml). A partial last block is
quantised as if padded with +0.0 (padding nibbles are 8).
"""

from __future__ import annotations

import struct

import numpy as np

from weightfile.ref.codecs.vqf.common import (
    F32,
    bits_of_f32,
    f32_of_bits,
    ieee,
    quantize_blocks,
    require_payload,
    saturating_trunc,
    scales_shape,
    split_blocks,
    validate_length,
    values_from_bits,
)
from weightfile.ref.codecs.vqf.f16 import f16_rne, f16_to_f32_bits, f16_trunc_ftz
from weightfile.ref.codecs.vqf.q8_0 import scale_violations
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import Violation

NAME = "q4_0"
BLOCK_BYTES = 2 + QK // 2  # f16 d, then 16 bytes of nibble pairs
ZERO_BLOCK_D = 0x3C00  # Kestrel stores the all-zero block with d = 1.0
# (spec/vqf.md §quant-q4-0 step 2)


def signed_max(xs: list[np.float32]) -> np.float32:
    """spec/vqf.md §quant-q4-0 step 1: the first value that attains the strictly largest |x| (its
    sign kept).

    An all-zero block keeps the starting +0.0, as ggml's loop does (then d = -0.0,
    spec/vqf.md §vs-ggml).
    """
    amax, maxv = F32(0), F32(0)
    for x in xs:
        if abs(x) > amax:
            amax, maxv = abs(x), x
    return maxv


def nibble(x: np.float32, inv: np.float32) -> int:
    """spec/vqf.md §quant-q4-0 step 4: trunc(x·id + 8.5) clamped to [0, 15] (two separately rounded
    f32 ops)."""
    return saturating_trunc(x * inv + F32(8.5), 0, 15)


def quantize_block_kestrel(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §quant-q4-0: d = maxv/-8, d := 1.0 when d == 0 (incl. -0), id = 1/d,
    f16_RNE(d)."""
    with ieee():
        d = signed_max(xs) / F32(-8)
        if d == 0:
            d = F32(1.0)
        inv = F32(1) / d
        return f16_rne(bits_of_f32(d)), [nibble(x, inv) for x in xs]


def quantize_block_kestrel_legacy(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §f16-rne legacy: identical to spec/vqf.md §quant-q4-0 except that d is stored
    with the truncating FTZ f16."""
    with ieee():
        d = signed_max(xs) / F32(-8)
        if d == 0:
            d = F32(1.0)
        inv = F32(1) / d
        return f16_trunc_ftz(bits_of_f32(d)), [nibble(x, inv) for x in xs]


def quantize_block_ggml(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §vs-ggml / ggml quantize_row_q4_0_ref: d = max/-8, id = 0 if d == 0, min(15,
    trunc(x·id+8.5))."""
    with ieee():
        d = signed_max(xs) / F32(-8)
        inv = F32(1) / d if d != 0 else F32(0)
        return f16_rne(bits_of_f32(d)), [nibble(x, inv) for x in xs]


QUANTIZERS = {
    "kestrel": quantize_block_kestrel,
    "kestrel_legacy": quantize_block_kestrel_legacy,
    "ggml": quantize_block_ggml,
}


def pack_block(d: int, nibbles: list[int]) -> bytes:
    """One 18 B block: d at +0; byte j = element j (low nibble) | element j+16 (high nibble)."""
    qs = bytes(nibbles[j] | nibbles[j + 16] << 4 for j in range(QK // 2))
    return struct.pack("<H", d) + qs


def unpack_block(raw: bytes) -> tuple[int, list[int]]:
    """The f16 scale bits and the 32 nibbles (element order) of one 18 B block."""
    (d,) = struct.unpack_from("<H", raw)
    qs = raw[2:BLOCK_BYTES]
    return d, [b & 0x0F for b in qs] + [b >> 4 for b in qs]


def read_blocks(payload: bytes) -> list[tuple[int, list[int]]]:
    """Every block of a length-checked payload, in storage order."""
    return split_blocks(payload, BLOCK_BYTES, unpack_block)


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Quantise row-major float32 values block by block with the chosen quantiser."""
    return quantize_blocks(NAME, values, rows, cols, mode, QUANTIZERS, pack_block, QK)


def words_of_blocks(
    blocks: list[tuple[int, list[int]]], rows: int, cols: int
) -> dict[str, np.ndarray]:
    """Nibbles uint8 [rows, cols] (value = (code - 8)·d; padding dropped), scales uint16."""
    codes = [c for _, nibbles in blocks for c in nibbles][: rows * cols]
    scales = [d for d, _ in blocks]
    return {
        "codes": np.array(codes, dtype=np.uint8).reshape(rows, cols),
        "scales": np.array(scales, dtype=np.uint16).reshape(scales_shape(rows, cols, len(blocks))),
    }


def values_of_blocks(blocks: list[tuple[int, list[int]]], rows: int, cols: int) -> np.ndarray:
    """Reconstruction of spec/vqf.md §q4-0: value = (nibble - 8) · d, one f32 multiply per
    element."""
    out: list[int] = []
    with ieee():
        for d, nibbles in blocks:
            scale = f32_of_bits(f16_to_f32_bits(d))
            out.extend(bits_of_f32(F32(q - 8) * scale) for q in nibbles)
    return values_from_bits(out[: rows * cols], rows, cols)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical nibbles and scales of a Q4_0 payload."""
    return words_of_blocks(read_blocks(require_payload(NAME, payload, rows, cols)), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] values of a Q4_0 payload."""
    return values_of_blocks(read_blocks(require_payload(NAME, payload, rows, cols)), rows, cols)


def zero_block_violations(
    name: str, d: int, codes: list[int], zero: int, offset: int
) -> list[Violation]:
    """The zero-scale rule: a block of all-zero codes is stored with d = 1.0, never d = ±0
    (spec/vqf.md §quant-q4-0).

    Kestrel never writes d = 0 with all codes at zero: every non-zero block has a code of -8 at its
    maxv element, and the all-zero block gets d = 1.0. The ggml form (d = 0x0000) is flagged.
    """
    if all(c == zero for c in codes) and d != ZERO_BLOCK_D:
        return [
            Violation(rule(name, "zero_block"), "all-zero block must have d = 0x3c00", offset, "d")
        ]
    return []


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite scale, the zero-block rule, padding nibbles equal to 8."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    n = rows * cols
    for i, (d, nibbles) in enumerate(read_blocks(bytes(payload))):
        offset = i * BLOCK_BYTES
        found += scale_violations(NAME, d, offset, signed=True)
        found += zero_block_violations(NAME, d, nibbles, 8, offset)
        for j in range(min(QK, n - i * QK), QK):
            if nibbles[j] != 8:  # byte j % 16 holds element j in its low (j < 16) or high nibble
                found.append(
                    Violation(rule(NAME, "padding"), "padding nibble is not 8", offset + 2 + j % 16)
                )
    return found
