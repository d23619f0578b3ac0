"""The closed registry of `.ninfer` v3 numeric formats, as data (spec/ninfer3.md §format-registry,
§direct-formats, §grouped-formats, §nvfp4, §fp8-row).

Each record states what a word means; where the words sit in the payload is `layouts`' business.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DirectFormat:
    """A format whose payload is one little-endian word per element (spec/ninfer3.md
    §direct-formats)."""

    name: str
    word_bytes: int  # bytes per element word
    kind: str  # "float" (IEEE-style bits) or "int" (two's complement)


@dataclass(frozen=True, slots=True)
class GroupedFormat:
    """A grouped signed-integer format with one binary16 multiplier per group
    (spec/ninfer3.md §grouped-formats)."""

    name: str
    code_bits: int  # b: width of the two's-complement code word
    group_size: int  # G: lanes per group along the last dimension K
    qmin: int  # smallest legal code
    # largest legal code; also the divisor of the grouped_absmax encoder
    # (spec/ninfer3.md §grouped-absmax)
    qmax: int
    illegal_codes: tuple[int, ...]  # codes the width can hold but the format forbids
    scale_format: str = "binary16"


@dataclass(frozen=True, slots=True)
class BlockFloatFormat:
    """NVFP4: E2M1 codes, one E4M3FN scale per 16 lanes along K, one FP32 divisor
    (spec/ninfer3.md §nvfp4)."""

    name: str
    code_format: str
    block_size: int
    scale_format: str
    divisor_format: str
    illegal_scale_words: tuple[int, ...]  # besides every word with the sign bit set


@dataclass(frozen=True, slots=True)
class RowFloatFormat:
    """Row-scaled FP8: one E4M3FN code per weight, one BF16 multiplier per row
    (spec/ninfer3.md §fp8-row)."""

    name: str
    code_format: str
    scale_format: str
    illegal_codes: tuple[int, ...]


Format = DirectFormat | GroupedFormat | BlockFloatFormat | RowFloatFormat

BF16 = DirectFormat("bf16", 2, "float")
FP32 = DirectFormat("fp32", 4, "float")
INT32 = DirectFormat("int32", 4, "int")
Q4_G64_FP16 = GroupedFormat("q4_g64_fp16", 4, 64, -8, 7, ())
Q5_G64_FP16 = GroupedFormat("q5_g64_fp16", 5, 64, -16, 15, ())
Q6_G64_FP16 = GroupedFormat("q6_g64_fp16", 6, 64, -32, 31, ())
Q8_G32_FP16 = GroupedFormat("q8_g32_fp16", 8, 32, -127, 127, (-128,))  # byte 0x80 is illegal
T2_G128_FP16 = GroupedFormat("t2_g128_fp16", 2, 128, -1, 1, (-2,))  # field 0b10 is illegal
NVFP4 = BlockFloatFormat("nvfp4", "e2m1", 16, "e4m3fn", "fp32", (0x7F,))
FP8_E4M3FN_ROW_BF16 = RowFloatFormat("fp8_e4m3fn_row_bf16", "e4m3fn", "bf16", (0x7F, 0xFF))

#: The 10 registered names (Q1: the 10-name registry is authoritative).
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        BF16,
        FP32,
        INT32,
        Q4_G64_FP16,
        Q5_G64_FP16,
        Q6_G64_FP16,
        Q8_G32_FP16,
        T2_G128_FP16,
        NVFP4,
        FP8_E4M3FN_ROW_BF16,
    )
}

GROUPED_FORMATS: dict[str, GroupedFormat] = {
    n: f for n, f in FORMATS.items() if isinstance(f, GroupedFormat)
}

#: E2M1 magnitudes of words 0..7 (spec/ninfer3.md §nvfp4); words 8..15 are their negatives.
E2M1_MAGNITUDES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

#: E4M3FN: largest finite magnitude 448 (word 0x7E); exponent bias 7; 3 mantissa bits
#: (spec/ninfer3.md §nvfp4, §e4m3fn-table).
E4M3FN_MAX = 448.0
E4M3FN_MAX_WORD = 0x7E
E4M3FN_BIAS = 7
