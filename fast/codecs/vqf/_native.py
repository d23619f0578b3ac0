"""The VQF codec kernels (fast/csrc/vqf_codecs.c) as the codecs see them.

NumPy alone does not reach the throughput goal for Q8_0/Q4_0 (per-block reductions over 32
elements cost a NumPy call per row), so these four block loops are in C. `weightfile.fast._native`
builds, caches and declares the one kernel library; this module only adds `disabled()`, which the
tests use to run the NumPy paths even where the kernels exist — both paths compute the same bits.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

from weightfile.fast._native import library

#: Encoder mode codes of vqf_codecs.c (MODE_<NAME>); tests/fast/test_c_mirrors.py checks them.
MODES = {"kestrel": 0, "kestrel_legacy": 1, "ggml": 2}

_disabled = 0


def lib() -> ctypes.CDLL | None:
    """The loaded kernels, or None when unavailable or disabled."""
    return None if _disabled else library()


@contextmanager
def disabled() -> Iterator[None]:
    """Run the NumPy paths even where the C kernels are available (for the tests)."""
    global _disabled
    _disabled += 1
    try:
        yield
    finally:
        _disabled -= 1
