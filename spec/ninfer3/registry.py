"""The closed registries of formats, layouts and resource encodings (ninfer-v3.md §3.1, §4.1).

Declared once; the size functions (`sizes.py`), the reader's deferred checks and the writer all
read these records. The registry has 10 format names (open question Q1: `t2_g128_fp16` counts).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Format:
    """One numeric format (§3.1); `word_bytes` is set for direct formats only."""

    name: str
    kind: str  # "direct", "grouped", "block_float" or "row_float"
    code_bits: int
    group: int | None = None  # lanes per scale group along K (grouped formats)
    word_bytes: int | None = None  # bytes per element (direct formats)
    base_bytes_per_group: int = 0  # row_split base plane bytes per group (§4.3 B)
    high_bytes_per_group: int = 0  # row_split high plane bytes per group (§4.3 H)


@dataclass(frozen=True, slots=True)
class Layout:
    """One storage layout (§4.1): what it accepts, its shape rule and its object alignment."""

    name: str
    accepts: tuple[str, ...]
    alignment: int
    rank: int | None  # None: any rank 0..16
    row_multiple: int = 1  # N % row_multiple == 0 (rank-2 layouts)
    column_multiple: int = 1  # K % column_multiple == 0 (rank-2 layouts)


@dataclass(frozen=True, slots=True)
class Encoding:
    """One resource encoding (§4.6)."""

    name: str
    alignment: int


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("bf16", "direct", 16, word_bytes=2),
        Format("fp32", "direct", 32, word_bytes=4),
        Format("int32", "direct", 32, word_bytes=4),
        Format("q4_g64_fp16", "grouped", 4, 64, base_bytes_per_group=32),
        Format("q5_g64_fp16", "grouped", 5, 64, base_bytes_per_group=32, high_bytes_per_group=8),
        Format("q6_g64_fp16", "grouped", 6, 64, base_bytes_per_group=32, high_bytes_per_group=16),
        Format("q8_g32_fp16", "grouped", 8, 32, base_bytes_per_group=32),
        Format("t2_g128_fp16", "grouped", 2, 128, base_bytes_per_group=32),
        Format("nvfp4", "block_float", 4, 16),
        Format("fp8_e4m3fn_row_bf16", "row_float", 8),
    )
}

ROW_SPLIT_K_ALIGNMENT = 128  # K_pad = align_up(K, 128) (§4.3)
PLANE_ALIGNMENT = 256  # planes inside an object start at multiples of 256 (§4.3-§4.5)

LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("contiguous_le_v1", ("bf16", "fp32", "int32"), 256, None),
        Layout(
            "row_split_k128_v1",
            ("q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"),
            256,
            2,
        ),
        Layout("block_scale_k16_m128x4_v1", ("nvfp4",), 256, 2, 128, 64),
        Layout("row_scale_v1", ("fp8_e4m3fn_row_bf16",), 256, 2),
    )
}

ENCODINGS: dict[str, Encoding] = {e.name: e for e in (Encoding("raw_bytes_v1", 1),)}

#: A device-only name that is never a legal artifact layout (§2.9); kept out of LAYOUTS on purpose.
DEVICE_ONLY_LAYOUTS = ("row_split_panel4_v1",)
