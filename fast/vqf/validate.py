"""validate with the C FNV kernel; must report exactly what weightfile.ref.vqf.validate reports."""

from __future__ import annotations

import functools

from weightfile.ref.vqf import validate as ref

from .fnv1a64 import fnv1a64

validate = functools.partial(ref.validate, hasher=fnv1a64)

__all__ = ["validate"]
