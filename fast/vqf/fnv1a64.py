"""FNV-1a-64 on the C kernel; must equal weightfile.ref.vqf.fnv1a64 bit for bit.

Falls back to the reference loop (slow) when the C kernels cannot be built on this machine.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast._native import library
from weightfile.ref.vqf import fnv1a64 as ref
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.vqf.constants import FNV_OFFSET_BASIS

fnv1a64_zeros = ref.fnv1a64_zeros


def fnv1a64(data: bytes | bytearray | memoryview, h: int = FNV_OFFSET_BASIS) -> int:
    """Same contract as ref: h ^= byte, h *= prime per byte; continue from `h`."""
    lib = library()
    if lib is None:
        return ref.fnv1a64(data, h)
    array = np.frombuffer(data, dtype=np.uint8)  # zero-copy, also for read-only maps
    return int(lib.wf_fnv1a64(array.ctypes.data, array.size, h))


def file_checksum(
    vqf: VQFFile,
    *,
    chunk: int = 64 << 20,
    progress: ref.Progress | None = None,
) -> int:
    """FNV-1a-64 over directory then data region (spec/vqf.md §fnv-trailer), in 64 MiB steps for
    progress."""
    return ref.file_checksum(vqf, hasher=fnv1a64, chunk=chunk, progress=progress)
