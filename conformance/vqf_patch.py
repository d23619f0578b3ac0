"""Byte patchers for VQF files that go through the schemas (spec/vqf.md §header, §directory), so a
change breaks exactly the field it names. The conformance generator and the tests both use them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from weightfile.ref.vqf.fnv1a64 import fnv1a64
from weightfile.spec.vqf.constants import DIRECTORY_OFFSET, ENTRY_BYTES
from weightfile.spec.vqf.header import VQFHeader
from weightfile.spec.vqf.tensor import VQFTensor


def patch_header(path: Path, change: Callable[[Any], None]) -> None:
    """Parse the 448-byte header with the current-layout schema, let `change` edit it, rebuild."""
    with open(path, "r+b") as fh:
        header = VQFHeader.parse(fh.read(VQFHeader.sizeof()))
        change(header)
        fh.seek(0)
        fh.write(VQFHeader.build(header))


def patch_entry(path: Path, index: int, **fields: Any) -> None:
    """Rewrite fields of directory entry `index`, then refresh the FNV trailer."""
    at = DIRECTORY_OFFSET + ENTRY_BYTES * index
    with open(path, "r+b") as fh:
        fh.seek(at)
        entry = VQFTensor.parse(fh.read(ENTRY_BYTES))
        entry.update(fields)
        fh.seek(at)
        fh.write(VQFTensor.build(entry))
    refresh_fnv(path)


def patch_bytes(path: Path, offset: int, data: bytes, *, refresh: bool = False) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)
    if refresh:
        refresh_fnv(path)


def insert_zeros(path: Path, offset: int, count: int) -> None:
    """Insert `count` zero bytes at `offset` (the caller fixes the fields that move)."""
    blob = path.read_bytes()
    path.write_bytes(blob[:offset] + bytes(count) + blob[offset:])


def read_header(path: Path) -> Any:
    with open(path, "rb") as fh:
        return VQFHeader.parse(fh.read(VQFHeader.sizeof()))


def refresh_fnv(path: Path) -> None:
    """Recompute the FNV-1a-64 trailer of a current-layout plaintext file (spec/vqf.md
    §fnv-trailer)."""
    h = read_header(path)
    blob = path.read_bytes()
    dir_end = DIRECTORY_OFFSET + ENTRY_BYTES * h.n_tensors
    digest = fnv1a64(blob[h.data_offset : h.file_len], fnv1a64(blob[DIRECTORY_OFFSET:dir_end]))
    patch_bytes(path, h.file_len, digest.to_bytes(8, "little"))
