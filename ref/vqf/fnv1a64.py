"""FNV-1a-64, byte by byte, as spec/vqf.md §fnv-trailer states it (the oracle for
fast/vqf/fnv1a64.py)."""

from __future__ import annotations

from collections.abc import Callable

from weightfile.spec.vqf.constants import FNV_OFFSET_BASIS, FNV_PRIME

from .records import VQFFile

_MASK64 = (1 << 64) - 1


def fnv1a64(data: bytes | bytearray | memoryview, h: int = FNV_OFFSET_BASIS) -> int:
    """For each byte: h ^= byte, then h *= prime, modulo 2**64. Pass `h` to continue a hash."""
    for byte in bytes(data):
        h ^= byte
        h = (h * FNV_PRIME) & _MASK64
    return h


def fnv1a64_zeros(count: int, h: int = FNV_OFFSET_BASIS) -> int:
    """Equals `fnv1a64(bytes(count), h)`: xor with 0 is the identity, so it is h·prime^count."""
    return (h * pow(FNV_PRIME, count, 1 << 64)) & _MASK64


Progress = Callable[[int], None]


def file_checksum(
    vqf: VQFFile,
    *,
    hasher: Callable[[memoryview, int], int] = fnv1a64,
    chunk: int = 1 << 20,
    progress: Progress | None = None,
) -> int:
    """FNV-1a-64 over the directory bytes, then the data region [data_offset, file_len)
    (spec/vqf.md §fnv-trailer). `hasher` is a `Backend.checksum` (ref/backend.py): the function, not
    the backend, because the backend is built from this module."""
    h = FNV_OFFSET_BASIS
    for region in (vqf.directory_bytes(), vqf.data_region()):
        for start in range(0, len(region), chunk):
            piece = region[start : start + chunk]
            h = hasher(piece, h)
            if progress is not None:
                progress(len(piece))
    return h
