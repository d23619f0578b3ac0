"""The C library's float functions the board calls: expf, powf, cosf, sinf.

spec/numerics.md §board-c-library. The board engine links glibc statically (the packs: Debian 12
aarch64 glibc 2.36), so these values are that library's, not correctly rounded ones. The profile
calls the host C library through ctypes and checks at load time that it is glibc and that it gives
aarch64 glibc 2.36's bits at inputs where that library is not correctly rounded (PROBES; a
correctly rounded or otherwise different libm fails them). spec/numerics.md §board-c-matters records
how often the host and board libraries differ.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from functools import cache

import numpy as np

from weightfile.spec.errors import UnsupportedError

F32 = np.float32

#: (function, arguments, aarch64 glibc 2.36's result bits); the correctly rounded result is one
#: ulp away in each case (spec/numerics.md §board-c-matters).
PROBES = (
    ("expf", (0.00045235652942210436,), 0x3F800ED4),
    ("sinf", (0.001566179096698761,), 0x3ACD483B),
    ("cosf", (0.02526303380727768,), 0x3F7FEB17),
    ("powf", (1e6, 4.5842472900403664e-05), 0x3F8014C3),
)


@cache
def _libm() -> ctypes.CDLL:
    """The host libm, refused unless it is glibc's (spec/numerics.md §board-c-library)."""
    libc_name, _version = platform.libc_ver()
    path = ctypes.util.find_library("m")
    if libc_name != "glibc" or path is None:
        raise UnsupportedError(
            "frontend.profile.libm",
            f"the kestrel-board profile needs glibc's libm (found {libc_name or 'none'})",
            path="libm",
        )
    lib = ctypes.CDLL(path)
    for name, nargs in (("expf", 1), ("powf", 2), ("cosf", 1), ("sinf", 1), ("fmaf", 3)):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_float
        fn.argtypes = [ctypes.c_float] * nargs
    for name, xs, want in PROBES:
        got = int(np.array([getattr(lib, name)(*xs)], dtype=F32).view(np.uint32)[0])
        if got != want:
            raise UnsupportedError(
                "frontend.profile.libm",
                f"the host libm's {name}{xs} is 0x{got:08X}, the board's glibc gives 0x{want:08X}",
                path="libm",
            )
    return lib


def expf(x: np.float32) -> np.float32:
    """libm expf of one float32 (spec/numerics.md §board-c-library)."""
    return F32(_libm().expf(float(x)))


def powf(x: np.float32, y: np.float32) -> np.float32:
    """libm powf (spec/numerics.md §board-c-library)."""
    return F32(_libm().powf(float(x), float(y)))


def cosf(x: np.float32) -> np.float32:
    """libm cosf (spec/numerics.md §board-c-library)."""
    return F32(_libm().cosf(float(x)))


def sinf(x: np.float32) -> np.float32:
    """libm sinf (spec/numerics.md §board-c-library)."""
    return F32(_libm().sinf(float(x)))


def fmaf(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """libm fmaf: the C library's one-rounding fma, the tests' second opinion on `fma.fma_f32`."""
    return F32(_libm().fmaf(float(a), float(b), float(c)))
