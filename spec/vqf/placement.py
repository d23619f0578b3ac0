"""Where a writer puts things (spec/vqf.md §placement) and what a reader derives from it."""

from __future__ import annotations

from collections.abc import Iterable

from .constants import (
    ALIGN,
    DIRECTORY_OFFSET,
    ENTRY_BYTES,
    FNV_TRAILER_BYTES,
    PAGE,
    TAG_TRAILER_BYTES,
)


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def directory_end(n_tensors: int) -> int:
    """End of the directory: 448 + 64·n."""
    return DIRECTORY_OFFSET + ENTRY_BYTES * n_tensors


def data_offset_for(n_tensors: int) -> int:
    """data_offset = round_up(448 + 64·n, 4096): 4096 up to n = 57 (spec/vqf.md §decisions item 12
    says 56)."""
    return round_up(directory_end(n_tensors), PAGE)


def tensor_offsets(data_offset: int, sizes: Iterable[int]) -> list[int]:
    """off_0 = data_offset, off_{i+1} = round_up(off_i + bytes_i, 64)."""
    offsets, cursor = [], data_offset
    for size in sizes:
        offsets.append(cursor)
        cursor = round_up(cursor + size, ALIGN)
    return offsets


def file_len_for(data_offset: int, sizes: Iterable[int]) -> int:
    """file_len = round_up(off_last + bytes_last, 64); data_offset when there are no tensors."""
    cursor = data_offset
    for size in sizes:
        cursor = round_up(cursor + size, ALIGN)
    return cursor


def trailer_bytes(encrypted: bool) -> int:
    """tag_len: 32 for ENC files (HMAC-SM3), else 8 (FNV-1a-64)."""
    return TAG_TRAILER_BYTES if encrypted else FNV_TRAILER_BYTES


def file_size_for(file_len: int, encrypted: bool) -> int:
    """File size = file_len + 8 (plaintext) or + 32 (ENC)."""
    return file_len + trailer_bytes(encrypted)
