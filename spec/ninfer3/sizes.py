"""Encoded size of every format × layout pair, sizes only (ninfer-v3.md §4.2-§4.5).

Each function takes a registered format and a shape that already fits the layout
(`shape_problem` returns None) and gives the object's `bytes`; the codecs live elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from weightfile.spec.ninfer3.domains import elements
from weightfile.spec.ninfer3.registry import (
    LAYOUTS,
    PLANE_ALIGNMENT,
    ROW_SPLIT_K_ALIGNMENT,
    Format,
    Layout,
)


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def shape_problem(layout: Layout, shape: Sequence[int]) -> str | None:
    """Why `shape` does not fit `layout` (rank, divisibility), or None when it fits (§4.1)."""
    if layout.rank is not None and len(shape) != layout.rank:
        return f"{layout.name} needs rank {layout.rank}, shape has rank {len(shape)}"
    if layout.rank == 2:
        n, k = shape
        if n % layout.row_multiple:
            return f"{layout.name} needs N % {layout.row_multiple} == 0, N is {n}"
        if k % layout.column_multiple:
            return f"{layout.name} needs K % {layout.column_multiple} == 0, K is {k}"
    return None


def contiguous_size(fmt: Format, shape: Sequence[int]) -> int:
    """contiguous_le_v1: elements × word bytes, no prefix or padding (§4.2)."""
    assert fmt.word_bytes is not None
    return elements(shape) * fmt.word_bytes


def row_split_planes(fmt: Format, shape: Sequence[int]) -> dict[str, int]:
    """row_split_k128_v1 plane geometry: K_pad, gpr, plane offsets and bytes (§4.3)."""
    assert fmt.group is not None
    n, k = shape
    k_pad = _align(k, ROW_SPLIT_K_ALIGNMENT)
    gpr = k_pad // fmt.group
    base_bytes = n * gpr * fmt.base_bytes_per_group
    high_bytes = n * gpr * fmt.high_bytes_per_group
    scale_bytes = n * gpr * 2
    high_offset = _align(base_bytes, PLANE_ALIGNMENT)
    scale_offset = high_offset + _align(high_bytes, PLANE_ALIGNMENT)
    return {
        "k_pad": k_pad,
        "groups_per_row": gpr,
        "base_offset": 0,
        "base_bytes": base_bytes,
        "high_offset": high_offset,
        "high_bytes": high_bytes,
        "scale_offset": scale_offset,
        "scale_bytes": scale_bytes,
        "bytes": scale_offset + scale_bytes,
    }


def row_split_size(fmt: Format, shape: Sequence[int]) -> int:
    """row_split_k128_v1: scale_offset + N·gpr·2, no tail padding (§4.3)."""
    return row_split_planes(fmt, shape)["bytes"]


def block_scale_size(fmt: Format, shape: Sequence[int]) -> int:
    """block_scale_k16_m128x4_v1: codes, 256-aligned scales, one FP32 divisor (§4.4)."""
    n, k = shape
    code_plane_bytes = n * k // 2
    scale_plane_offset = _align(code_plane_bytes, PLANE_ALIGNMENT)
    return scale_plane_offset + n * k // 16 + 4


def row_scale_size(fmt: Format, shape: Sequence[int]) -> int:
    """row_scale_v1: N·K codes, 256-aligned BF16 scale per row (§4.5)."""
    n, k = shape
    return _align(n * k, PLANE_ALIGNMENT) + 2 * n


SIZE_FUNCTIONS: dict[str, Callable[[Format, Sequence[int]], int]] = {
    "contiguous_le_v1": contiguous_size,
    "row_split_k128_v1": row_split_size,
    "block_scale_k16_m128x4_v1": block_scale_size,
    "row_scale_v1": row_scale_size,
}

assert set(SIZE_FUNCTIONS) == set(LAYOUTS), "every layout has exactly one size function"


def encoded_size(layout: str, fmt: Format, shape: Sequence[int]) -> int:
    """encoded_size(layout, format, shape) for a compatible, fitting pair (§4)."""
    return SIZE_FUNCTIONS[layout](fmt, shape)
