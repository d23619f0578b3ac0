"""The one place that builds, loads and declares the C kernels (fast/csrc/*.c).

The library is compiled on first use with the system C compiler and cached by a hash of the
sources, the flags, the compiler and the machine, so an edited kernel is rebuilt and a stale one
is never loaded. Every build uses `-ffp-contract=off`: a fused multiply-add rounds once where the
reference rounds twice, which changes results (for example Q4_0 codes at exact .5 boundaries).
On aarch64 the NEON/dotprod code paths are enabled by `-march`; elsewhere the portable C is used.
When no compiler is available, `library()` returns None after one clear warning, and callers fall
back to NumPy or to the reference.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

CSRC = Path(__file__).with_name("csrc")
BASE_FLAGS = ("-O2", "-ffp-contract=off", "-fPIC", "-shared", "-std=c11", "-fno-math-errno")
#: Per-machine flags: the RK3588's Cortex-A76/A55 cores have NEON and the dotprod extension.
ARCH_FLAGS = {"aarch64": ("-march=armv8.2-a+dotprod",), "arm64": ("-march=armv8.2-a+dotprod",)}


class NativeUnavailable(RuntimeError):
    """The C kernels could not be built here; the NumPy/Python fallback is in use."""


def compiler() -> str | None:
    """$CC if set, else the first of cc, gcc, clang on PATH."""
    if os.environ.get("CC"):
        return os.environ["CC"]
    return next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def cache_dir() -> Path:
    root = os.environ.get("WEIGHTFILE_CACHE") or os.environ.get("XDG_CACHE_HOME")
    base = Path(root) if root else Path.home() / ".cache"
    return (base if os.environ.get("WEIGHTFILE_CACHE") else base / "weightfile") / "native"


def flags() -> tuple[str, ...]:
    return BASE_FLAGS + ARCH_FLAGS.get(platform.machine(), ())


def build(cc: str, sources: list[Path], out_dir: Path) -> Path:
    """Compile `sources` into one shared library in `out_dir`, published atomically."""
    digest = hashlib.sha256()
    for part in (cc, platform.machine(), *flags()):
        digest.update(part.encode() + b"\0")
    for src in sources:
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    target = out_dir / f"libweightfile-{platform.machine()}-{digest.hexdigest()[:16]}.so"
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".build-", suffix=".so")
    os.close(fd)
    try:
        cmd = [cc, *flags(), "-o", tmp, *map(str, sources)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise NativeUnavailable(f"{' '.join(cmd)} failed:\n{result.stderr.strip()}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded kernel library with its prototypes declared, or None (after one warning)."""
    if os.environ.get("WEIGHTFILE_NO_NATIVE"):
        return None
    try:
        cc = compiler()
        if cc is None:
            raise NativeUnavailable("no C compiler found (set CC, or install cc/gcc/clang)")
        lib = ctypes.CDLL(str(build(cc, sorted(CSRC.glob("*.c")), cache_dir())))
    except (NativeUnavailable, OSError) as exc:
        warnings.warn(
            f"weightfile: C kernels unavailable, using the slower fallback: {exc}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    _declare(lib)
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    """Every prototype, in one block."""
    u8p = ctypes.c_void_p
    lib.wf_fnv1a64.argtypes = (u8p, ctypes.c_size_t, ctypes.c_uint64)
    lib.wf_fnv1a64.restype = ctypes.c_uint64
