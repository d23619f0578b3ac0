"""validate with the C FNV kernel; must report exactly what weightfile.ref.vqf.validate reports."""

from __future__ import annotations

import functools

from weightfile.fast.backend import FAST
from weightfile.ref.vqf import validate as ref

validate = functools.partial(ref.validate, backend=FAST)

__all__ = ["validate"]
