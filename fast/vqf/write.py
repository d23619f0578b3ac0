"""write_vqf with the C FNV kernel; must write the same bytes as weightfile.ref.vqf.write."""

from __future__ import annotations

import functools

from weightfile.fast.backend import FAST
from weightfile.ref.vqf import write as ref
from weightfile.ref.vqf.write import TensorSource

write_vqf = functools.partial(ref.write_vqf, backend=FAST)

__all__ = ["TensorSource", "write_vqf"]
