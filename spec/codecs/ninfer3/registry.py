"""The closed set of `.ninfer` v3 codecs: (format, layout) pairs, encoders and rule ids
(spec/ninfer3.md §formats, §layouts).

A codec is one (format, layout) pair the layout accepts (spec/ninfer3.md §layout-registry).
Resources carry an `encoding` instead of a format, so the one resource codec is keyed `(None,
"raw_bytes_v1")`. `module` names the module of `weightfile.ref.codecs.ninfer3` (and of `fast`) that
implements the pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from weightfile.spec.codecs.ninfer3.formats import FORMATS
from weightfile.spec.codecs.ninfer3.layouts import (
    BLOCK_SCALE_K16_M128X4_V1,
    CONTIGUOUS_LE_V1,
    RAW_BYTES_V1,
    ROW_SCALE_V1,
    ROW_SPLIT_K128_V1,
)

GROUPED_ABSMAX = "grouped_absmax"  # spec/ninfer3.md §grouped-absmax, q4/q5/q6/q8 (Q7: not t2)
FP8_ROW_MAXABS = "fp8_row_maxabs"  # spec/ninfer3.md §fp8-row-maxabs
# spec/ninfer3.md §direct-formats "bf16 by RNE", the bit rule of
# spec/ninfer3.md §fp8-row-maxabs step 4
BF16_RNE = "bf16_rne"
EXACT = "exact"  # fp32 / int32: the words are the values
VERBATIM = "verbatim"  # raw bytes


@dataclass(frozen=True, slots=True)
class CodecPair:
    """One registered codec."""

    format: str | None
    layout: str
    module: str  # module name under ref/codecs/ninfer3 and fast/codecs/ninfer3
    encoder: str | None  # canonical value encoder; None = words can only be imported (nvfp4)


CODECS: dict[tuple[str | None, str], CodecPair] = {
    (c.format, c.layout): c
    for c in (
        CodecPair("bf16", CONTIGUOUS_LE_V1, "contiguous_le_v1", BF16_RNE),
        CodecPair("fp32", CONTIGUOUS_LE_V1, "contiguous_le_v1", EXACT),
        CodecPair("int32", CONTIGUOUS_LE_V1, "contiguous_le_v1", EXACT),
        CodecPair("q4_g64_fp16", ROW_SPLIT_K128_V1, "row_split_k128_v1", GROUPED_ABSMAX),
        CodecPair("q5_g64_fp16", ROW_SPLIT_K128_V1, "row_split_k128_v1", GROUPED_ABSMAX),
        CodecPair("q6_g64_fp16", ROW_SPLIT_K128_V1, "row_split_k128_v1", GROUPED_ABSMAX),
        CodecPair("q8_g32_fp16", ROW_SPLIT_K128_V1, "row_split_k128_v1", GROUPED_ABSMAX),
        CodecPair("t2_g128_fp16", ROW_SPLIT_K128_V1, "row_split_k128_v1", None),
        CodecPair("nvfp4", BLOCK_SCALE_K16_M128X4_V1, "block_scale_k16_m128x4_v1", None),
        CodecPair("fp8_e4m3fn_row_bf16", ROW_SCALE_V1, "row_scale_v1", FP8_ROW_MAXABS),
        CodecPair(None, RAW_BYTES_V1, "raw_bytes_v1", VERBATIM),
    )
}

assert {c.format for c in CODECS.values()} - {None} == set(FORMATS), "every format has a codec"


def rule(layout_or_encoder: str, name: str) -> str:
    """The rule id `ninfer3.codec.<layout or encoder>.<name>`."""
    return f"ninfer3.codec.{layout_or_encoder}.{name}"


# Rule names shared by the layouts (prefixed with the layout by `rule`).
LENGTH = "length"  # payload length != encoded size (MalformedError)
SHAPE = "shape"  # the shape does not fit the layout (spec/ninfer3.md §layout-registry)
CODE_DOMAIN = "code_domain"  # an illegal code word (Q8 0x80, T2 0b10, E4M3FN NaN)
SCALE_INVALID = "scale_invalid"  # negative, -0, inf or NaN scale; an invalid E4M3FN block scale
ZERO_SCALE_NONZERO_CODE = "zero_scale_nonzero_code"  # +0 scale with a non-zero code
PADDING_NONZERO = "padding_nonzero"  # a padding lane (column >= K) with a non-zero code bit
PADDING_SCALE_NONZERO = "padding_scale_nonzero"  # a wholly-padding group whose scale != 0x0000
GAP_NONZERO = "gap_nonzero"  # a non-zero byte in the zero gap between planes
DIVISOR_INVALID = "divisor_invalid"  # nvfp4 d_w not finite and > 0
WORDS = "words"  # encode_words got words of the wrong shape or outside the code width
VALUES = "values"  # encode got values of the wrong shape or dtype
ROWS = "rows"  # a row view or slice selects no row or a row outside [0, N)
NO_ENCODER = "no_encoder"  # the pair has no value encoder (nvfp4, t2): import words instead

# Encoder failures (prefixed with the encoder by `rule`).
NONFINITE = "nonfinite"  # a NaN or infinity reached an encoder that must fail on it
# grouped_absmax: the binary16 scale rounds to inf (spec/ninfer3.md §grouped-absmax step 6)
SCALE_OVERFLOW = "scale_overflow"
# fp8_row_maxabs: 1/scale is not finite (spec/ninfer3.md §fp8-row-maxabs step 5, Q8)
INVERSE_OVERFLOW = "inverse_overflow"
