"""Byte geometry of the `.ninfer` v3 storage layouts, as data and size functions
(spec/ninfer3.md §layouts).

Every offset here is relative to the start of the object's payload. The functions take a shape that
has already passed `shape_problem` and return plain integers; they never look at payload bytes. This
module is the one home of the spec/ninfer3.md §layouts geometry: the container's deferred object
checks (`weightfile.spec.ninfer3.registry`, `weightfile.ref.ninfer3.objects`) use these same
functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from weightfile.spec.codecs.ninfer3.formats import FORMATS, GROUPED_FORMATS, DirectFormat

CONTIGUOUS_LE_V1 = "contiguous_le_v1"
ROW_SPLIT_K128_V1 = "row_split_k128_v1"
BLOCK_SCALE_K16_M128X4_V1 = "block_scale_k16_m128x4_v1"
ROW_SCALE_V1 = "row_scale_v1"
RAW_BYTES_V1 = "raw_bytes_v1"

#: Every layout keeps its object's logical-payload offset aligned to this many bytes
#: (spec/ninfer3.md §layout-registry).
LAYOUT_ALIGNMENT: dict[str, int] = {
    CONTIGUOUS_LE_V1: 256,
    ROW_SPLIT_K128_V1: 256,
    BLOCK_SCALE_K16_M128X4_V1: 256,
    ROW_SCALE_V1: 256,
    RAW_BYTES_V1: 1,
}

# planes inside one payload start on 256-byte boundaries
# (spec/ninfer3.md §row-split, §block-scale, §row-scale)
PLANE_ALIGNMENT = 256
ROW_SPLIT_K_ALIGNMENT = 128  # K is padded to a multiple of 128 lanes (spec/ninfer3.md §row-split)
NVFP4_ROW_TILE = 128  # N % 128 == 0 (spec/ninfer3.md §layout-registry)
NVFP4_K_TILE = 64  # K % 64 == 0: four 16-lane scale groups per tile (spec/ninfer3.md §block-scale)
MAX_CONTIGUOUS_RANK = 16


def align_up(value: int, alignment: int) -> int:
    """Smallest multiple of `alignment` that is >= `value`."""
    return -(-value // alignment) * alignment


def shape_problem(layout: str, shape: tuple[int, ...]) -> str | None:
    """Why `shape` does not fit `layout` (spec/ninfer3.md §layout-registry shape constraints), or
    None when it fits."""
    if any(not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in shape):
        return "every dimension must be a positive integer"
    if layout == CONTIGUOUS_LE_V1:
        if len(shape) > MAX_CONTIGUOUS_RANK:
            return f"{layout} needs rank 0..{MAX_CONTIGUOUS_RANK}, shape has rank {len(shape)}"
        return None
    if layout == RAW_BYTES_V1:
        return None if len(shape) == 1 else "a resource is one non-empty byte string"
    if len(shape) != 2:
        return f"{layout} needs rank 2, shape has rank {len(shape)}"
    n, k = shape
    if layout == BLOCK_SCALE_K16_M128X4_V1 and n % NVFP4_ROW_TILE:
        return f"{layout} needs N % {NVFP4_ROW_TILE} == 0, N is {n}"
    if layout == BLOCK_SCALE_K16_M128X4_V1 and k % NVFP4_K_TILE:
        return f"{layout} needs K % {NVFP4_K_TILE} == 0, K is {k}"
    return None


# --- contiguous_le_v1 (spec/ninfer3.md §contiguous)
# -------------------------------------------------------------------


def contiguous_bytes(format_name: str, shape: tuple[int, ...]) -> int:
    """bytes = elements × word size; rank 0 holds one word (spec/ninfer3.md §contiguous)."""
    fmt = FORMATS[format_name]
    assert isinstance(fmt, DirectFormat)
    return prod(shape) * fmt.word_bytes


# --- row_split_k128_v1 (spec/ninfer3.md §row-split)
# ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowSplitPlaneGeometry:
    """Per-format constants of the spec/ninfer3.md §row-split geometry table."""

    code_bits: int  # b
    group_size: int  # G
    base_bytes_per_group: int  # B
    high_bytes_per_group: int  # H


#: The B and H columns of the spec/ninfer3.md §row-split geometry table; b and G are the
#: spec/ninfer3.md §format-registry format's own.
ROW_SPLIT_PLANE_BYTES: dict[str, tuple[int, int]] = {
    "q4_g64_fp16": (32, 0),
    "q5_g64_fp16": (32, 8),
    "q6_g64_fp16": (32, 16),
    "q8_g32_fp16": (32, 0),
    "t2_g128_fp16": (32, 0),
}

#: The spec/ninfer3.md §row-split geometry table, keyed by format name.
ROW_SPLIT_GEOMETRY: dict[str, RowSplitPlaneGeometry] = {
    name: RowSplitPlaneGeometry(f.code_bits, f.group_size, *ROW_SPLIT_PLANE_BYTES[name])
    for name, f in GROUPED_FORMATS.items()
}


@dataclass(frozen=True, slots=True)
class RowSplitPlanes:
    """Where the base, high and scale planes of one `[N, K]` object sit (spec/ninfer3.md
    §row-split)."""

    n: int
    k: int
    k_pad: int  # align_up(K, 128)
    gpr: int  # physical groups per row = K_pad / G
    logical_groups: int  # ceil(K / G) groups per row hold at least one logical lane
    base_offset: int
    base_bytes: int
    high_offset: int
    high_bytes: int
    scale_offset: int
    scale_bytes: int
    bytes: int  # scale_offset + scale_bytes; no tail padding
    base_row_stride: int  # gpr·B
    high_row_stride: int  # gpr·H
    scale_row_stride: int  # gpr·2


def row_split_planes(format_name: str, shape: tuple[int, ...]) -> RowSplitPlanes:
    """The spec/ninfer3.md §row-split geometry formulas, in the spec's order."""
    geo = ROW_SPLIT_GEOMETRY[format_name]
    n, k = shape
    k_pad = align_up(k, ROW_SPLIT_K_ALIGNMENT)
    gpr = k_pad // geo.group_size
    logical_groups = -(-k // geo.group_size)
    base_bytes = n * gpr * geo.base_bytes_per_group
    high_bytes = n * gpr * geo.high_bytes_per_group
    scale_bytes = n * gpr * 2
    base_offset = 0
    high_offset = align_up(base_bytes, PLANE_ALIGNMENT)
    scale_offset = high_offset + align_up(high_bytes, PLANE_ALIGNMENT)
    return RowSplitPlanes(
        n=n,
        k=k,
        k_pad=k_pad,
        gpr=gpr,
        logical_groups=logical_groups,
        base_offset=base_offset,
        base_bytes=base_bytes,
        high_offset=high_offset,
        high_bytes=high_bytes,
        scale_offset=scale_offset,
        scale_bytes=scale_bytes,
        bytes=scale_offset + scale_bytes,
        base_row_stride=gpr * geo.base_bytes_per_group,
        high_row_stride=gpr * geo.high_bytes_per_group,
        scale_row_stride=gpr * 2,
    )


@dataclass(frozen=True, slots=True)
class Span:
    """A byte range `[offset, offset + length)` of the parent payload."""

    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class RowView:
    """Rows `[start, start + count)` as three spans of the parent; K_pad and gpr are kept
    (spec/ninfer3.md §row-split)."""

    start: int
    count: int
    base: Span
    high: Span
    scale: Span


def row_split_row_view(format_name: str, shape: tuple[int, ...], start: int, count: int) -> RowView:
    """Spans at `plane_offset + r·row_stride` for rows `[start, start + count)`
    (spec/ninfer3.md §row-split Row views)."""
    p = row_split_planes(format_name, shape)
    if not (start >= 0 and count > 0 and start + count <= p.n):
        raise ValueError(f"rows [{start}, {start + count}) outside [0, {p.n})")
    return RowView(
        start=start,
        count=count,
        base=Span(p.base_offset + start * p.base_row_stride, count * p.base_row_stride),
        high=Span(p.high_offset + start * p.high_row_stride, count * p.high_row_stride),
        scale=Span(p.scale_offset + start * p.scale_row_stride, count * p.scale_row_stride),
    )


# --- block_scale_k16_m128x4_v1 (spec/ninfer3.md §block-scale)
# ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlockScalePlanes:
    """Code plane, swizzled scale plane and divisor word of one nvfp4 `[N, K]` object
    (spec/ninfer3.md §block-scale)."""

    n: int
    k: int
    code_plane_bytes: int  # N·K/2, two lanes per byte
    scale_plane_offset: int
    scale_plane_bytes: int  # N·K/16, one E4M3FN word per 16 lanes
    weight_divisor_offset: int
    bytes: int  # weight_divisor_offset + 4


def block_scale_planes(shape: tuple[int, ...]) -> BlockScalePlanes:
    """The spec/ninfer3.md §block-scale geometry formulas."""
    n, k = shape
    code_plane_bytes = n * k // 2
    scale_plane_offset = align_up(code_plane_bytes, PLANE_ALIGNMENT)
    scale_plane_bytes = n * k // 16
    weight_divisor_offset = scale_plane_offset + scale_plane_bytes
    return BlockScalePlanes(
        n=n,
        k=k,
        code_plane_bytes=code_plane_bytes,
        scale_plane_offset=scale_plane_offset,
        scale_plane_bytes=scale_plane_bytes,
        weight_divisor_offset=weight_divisor_offset,
        bytes=weight_divisor_offset + 4,
    )


def nvfp4_scale_index(n: int, g: int, k: int) -> int:
    """Scale-plane byte of natural scale s[n, g] under the 128×4 swizzle (spec/ninfer3.md
    §block-scale Swizzle)."""
    k_tiles = k // NVFP4_K_TILE
    m = n % NVFP4_ROW_TILE
    return (n // NVFP4_ROW_TILE * k_tiles + g // 4) * 512 + (m % 32) * 16 + (m // 32) * 4 + g % 4


# --- row_scale_v1 (spec/ninfer3.md §row-scale)
# -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowScalePlanes:
    """Code plane and BF16 row-scale plane of one fp8 row `[N, K]` object (spec/ninfer3.md
    §row-scale)."""

    n: int
    k: int
    code_plane_bytes: int  # N·K, code [n, k] at n·K + k
    scale_plane_offset: int  # align_up(N·K, 256); zero bytes in between
    bytes: int  # scale_plane_offset + 2·N


def row_scale_planes(shape: tuple[int, ...]) -> RowScalePlanes:
    """The spec/ninfer3.md §row-scale geometry formulas."""
    n, k = shape
    scale_plane_offset = align_up(n * k, PLANE_ALIGNMENT)
    return RowScalePlanes(n, k, n * k, scale_plane_offset, scale_plane_offset + 2 * n)


# --- every pair ---------------------------------------------------------------------------------


def encoded_size(format_name: str, layout: str, shape: tuple[int, ...]) -> int:
    """Payload bytes of a (format, layout) object of `shape`; the shape must fit the layout."""
    if layout == CONTIGUOUS_LE_V1:
        return contiguous_bytes(format_name, shape)
    if layout == ROW_SPLIT_K128_V1 and format_name in GROUPED_FORMATS:
        return row_split_planes(format_name, shape).bytes
    if layout == BLOCK_SCALE_K16_M128X4_V1:
        return block_scale_planes(shape).bytes
    if layout == ROW_SCALE_V1:
        return row_scale_planes(shape).bytes
    if layout == RAW_BYTES_V1:
        return shape[0]
    raise KeyError((format_name, layout))
