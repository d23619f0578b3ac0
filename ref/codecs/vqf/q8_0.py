"""Q8_0 legacy (qtype 0x02): 34 B blocks of an f16 scale and 32 int8 codes (spec/vqf.md §q8-0,
§quant-q8-0).

Encoder modes: "kestrel" (spec/vqf.md §quant-q8-0, the current converter), "kestrel_legacy"
(spec/vqf.md §f16-rne, older engine builds), "ggml" (ggml's quantize_row_q8_0_ref, spec/vqf.md
§vs-ggml). Blocks run in flat row-major order; a partial last block (N % 32 != 0) is quantised as if
padded with +0.0, so its unused codes are 0.
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
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import Violation

NAME = "q8_0"
BLOCK_BYTES = 2 + QK  # f16 d, then 32 int8 codes
FLOOR = F32(1e-10)  # the 1e-10 floors of spec/vqf.md §quant-q8-0 (an f32 constant)


def kestrel_scale(xs: list[np.float32]) -> np.float32:
    """spec/vqf.md §quant-q8-0 steps 1-2: amax = max(1e-10, max|x|); scale = amax/127, floored at
    1e-10."""
    amax = FLOOR  # start at 1e-10, then the running max of |x|
    for x in xs:
        if abs(x) > amax:
            amax = abs(x)
    scale = amax / F32(127)
    return FLOOR if scale < FLOOR else scale


def kestrel_code(x: np.float32, r: np.float32) -> int:
    """spec/vqf.md §quant-q8-0 step 5: trunc(x·r + 0.5) if x·r >= 0 else trunc(x·r - 0.5), clamped
    to ±127."""
    v = x * r
    v = v + F32(0.5) if v >= 0 else v - F32(0.5)
    return saturating_trunc(v, -127, 127)


def quantize_block_kestrel(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §quant-q8-0: d = f16_RNE(scale); r = 1/scale from the unrounded f32 scale."""
    with ieee():
        scale = kestrel_scale(xs)
        r = F32(1) / scale
        return f16_rne(bits_of_f32(scale)), [kestrel_code(x, r) for x in xs]


def quantize_block_kestrel_legacy(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §f16-rne legacy: truncating FTZ f16 scale; codes trunc(x/scale + 0.5) (biases
    negatives up).

    The floors and the ±127 clamp are assumed unchanged from spec/vqf.md §quant-q8-0, which names
    only these two differences.
    """
    with ieee():
        scale = kestrel_scale(xs)
        codes = [saturating_trunc(x / scale + F32(0.5), -127, 127) for x in xs]
        return f16_trunc_ftz(bits_of_f32(scale)), codes


def ggml_round(v: np.float32) -> np.float32:
    """C roundf: nearest integer, halfway cases away from zero, computed without rounding error."""
    a = abs(v)
    t = F32(int(a)) if np.isfinite(a) else a  # trunc(|v|); |v| < 2^24 has an exact f32 fraction
    if np.isfinite(a) and a - t >= F32(0.5):
        t = t + F32(1)
    return -t if v < 0 else t


def quantize_block_ggml(xs: list[np.float32]) -> tuple[int, list[int]]:
    """spec/vqf.md §vs-ggml / ggml quantize_row_q8_0_ref: d = amax/127, id = 1/d (0 when d = 0),
    roundf(x·id)."""
    with ieee():
        amax = F32(0)
        for x in xs:
            if abs(x) > amax:
                amax = abs(x)
        d = amax / F32(127)
        inv = F32(1) / d if d != 0 else F32(0)
        codes = [saturating_trunc(ggml_round(x * inv), -127, 127) for x in xs]
        return f16_rne(bits_of_f32(d)), codes


QUANTIZERS = {
    "kestrel": quantize_block_kestrel,
    "kestrel_legacy": quantize_block_kestrel_legacy,
    "ggml": quantize_block_ggml,
}


def pack_block(d: int, codes: list[int]) -> bytes:
    """One 34 B block: d (u16 LE) at +0, code j (int8) at +2+j (spec/vqf.md §q8-0)."""
    return struct.pack("<H32b", d, *codes)


def unpack_block(raw: bytes) -> tuple[int, list[int]]:
    """The f16 scale bits and the 32 int8 codes of one 34 B block."""
    d, *codes = struct.unpack("<H32b", raw)
    return d, codes


def read_blocks(payload: bytes) -> list[tuple[int, list[int]]]:
    """Every block of a length-checked payload, in storage order."""
    return split_blocks(payload, BLOCK_BYTES, unpack_block)


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Quantise row-major float32 values block by block with the chosen quantiser."""
    return quantize_blocks(NAME, values, rows, cols, mode, QUANTIZERS, pack_block, QK)


def words_of_blocks(
    blocks: list[tuple[int, list[int]]], rows: int, cols: int
) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] (padding dropped) and scales uint16 in block order."""
    codes = [c for _, block_codes in blocks for c in block_codes][: rows * cols]
    scales = [d for d, _ in blocks]
    return {
        "codes": np.array(codes, dtype=np.int8).reshape(rows, cols),
        "scales": np.array(scales, dtype=np.uint16).reshape(scales_shape(rows, cols, len(blocks))),
    }


def values_of_blocks(blocks: list[tuple[int, list[int]]], rows: int, cols: int) -> np.ndarray:
    """Reconstruction of spec/vqf.md §q8-0: value = code · d, one f32 multiply per element."""
    out: list[int] = []
    with ieee():
        for d, codes in blocks:
            scale = f32_of_bits(f16_to_f32_bits(d))
            out.extend(bits_of_f32(F32(c) * scale) for c in codes)
    return values_from_bits(out[: rows * cols], rows, cols)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """The logical codes and scales of a Q8_0 payload."""
    return words_of_blocks(read_blocks(require_payload(NAME, payload, rows, cols)), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols] values of a Q8_0 payload."""
    return values_of_blocks(read_blocks(require_payload(NAME, payload, rows, cols)), rows, cols)


def scale_violations(name: str, d: int, offset: int, *, signed: bool) -> list[Violation]:
    """A scale must be finite (…scale_finite) and, unless `signed`, not negative."""
    if d & 0x7C00 == 0x7C00:
        return [Violation(rule(name, "scale_finite"), "scale is NaN or Inf", offset, "d")]
    if not signed and d & 0x8000:
        return [Violation(rule(name, "scale_sign"), "scale is negative", offset, "d")]
    return []


def code_violations(
    name: str, codes: list[int], offset: int, lo: int, hi: int, n_real: int
) -> list[Violation]:
    """Codes within [lo, hi] (vqf.codec.<name>.code_domain); padding codes 0 (…padding)."""
    found = []
    for j, c in enumerate(codes):
        if j >= n_real and c != 0:
            found.append(Violation(rule(name, "padding"), "padding code is not 0", offset + 2 + j))
        elif not lo <= c <= hi:
            found.append(
                Violation(
                    rule(name, "code_domain"), f"code {c} outside [{lo}, {hi}]", offset + 2 + j
                )
            )
    return found


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite non-negative scale, codes in [-127, 127], zero padding codes."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    n = rows * cols
    for i, (d, codes) in enumerate(read_blocks(bytes(payload))):
        offset = i * BLOCK_BYTES
        found += scale_violations(NAME, d, offset, signed=False)
        found += code_violations(NAME, codes, offset, -127, 127, min(QK, n - i * QK))
    return found
