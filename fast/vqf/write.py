"""write_vqf with the C FNV kernel; must write the same bytes as weightfile.ref.vqf.write."""

from __future__ import annotations

import functools

from weightfile.ref.vqf import write as ref
from weightfile.ref.vqf.write import TensorSource

from .fnv1a64 import fnv1a64

write_vqf = functools.partial(ref.write_vqf, hasher=fnv1a64)

__all__ = ["TensorSource", "write_vqf"]
