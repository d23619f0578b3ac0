"""Loads the optional C block kernels of fast/csrc/vqf_codecs.c through ctypes.

NumPy alone does not reach the throughput goal for Q8_0/Q4_0 (per-block reductions over 32
elements cost a NumPy call per row), so these four loops are in C. The library is compiled once per
source hash with the system C compiler, `-O2 -ffp-contract=off` (no FMA contraction, no fast-math),
into a per-user cache; if no compiler is available, or WEIGHTFILE_NO_NATIVE=1, every caller falls
back to its NumPy path, which computes the same bits. Tests run both paths (`disabled`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parents[2] / "csrc" / "vqf_codecs.c"
CFLAGS = [
    "-O2",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fno-math-errno",
    "-fvect-cost-model=dynamic",
    "-shared",
    "-fPIC",
]
MODES = {"kestrel": 0, "kestrel_legacy": 1, "ggml": 2}

_lib: ctypes.CDLL | None = None
_tried = False
_disabled = 0

_F32P = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
_U8P = np.ctypeslib.ndpointer(np.uint8, flags="C_CONTIGUOUS")
_I64, _I32 = ctypes.c_int64, ctypes.c_int32


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "weightfile"


def _build() -> Path | None:
    """Compile the source into the cache (atomically: a failed build leaves nothing there)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None or not SOURCE.is_file():
        return None
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    target = _cache_dir() / f"vqf_codecs-{digest}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        subprocess.run(
            [cc, *CFLAGS, "-o", tmp, str(SOURCE), "-lm"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _declare(lib: ctypes.CDLL) -> None:
    """Every prototype in one place."""
    lib.vqf_q8_0_quantize.argtypes = [_F32P, _I64, _I32, _I32, _U8P]
    lib.vqf_q4_0_quantize.argtypes = [_F32P, _I64, _I32, _I32, _U8P]
    lib.vqf_q8_0_dequantize.argtypes = [_U8P, _I64, _F32P]
    lib.vqf_q4_0_dequantize.argtypes = [_U8P, _I64, _F32P]
    lib.vqf_q8_0_quantize.restype = _I32  # 1 when the input held NaN/Inf
    lib.vqf_q4_0_quantize.restype = _I32
    lib.vqf_q8_0_dequantize.restype = None
    lib.vqf_q4_0_dequantize.restype = None


def lib() -> ctypes.CDLL | None:
    """The loaded kernels, or None when unavailable or disabled."""
    global _lib, _tried
    if _disabled or os.environ.get("WEIGHTFILE_NO_NATIVE") == "1":
        return None
    if not _tried:
        _tried = True
        path = _build()
        if path is not None:
            try:
                loaded = ctypes.CDLL(str(path))
                _declare(loaded)
                _lib = loaded
            except OSError:
                _lib = None
    return _lib


@contextmanager
def disabled() -> Iterator[None]:
    """Run the NumPy paths even where the C kernels are available (for the tests)."""
    global _disabled
    _disabled += 1
    try:
        yield
    finally:
        _disabled -= 1
