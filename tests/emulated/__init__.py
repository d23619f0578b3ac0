"""The kernels cross-built for aarch64 and run under qemu-user (tests/fast/neon/).

`tests/fast/neon/driver.c` is compiled with every source of fast/csrc for armv8.2-a+dotprod, as
the library is built on the board, and run under `qemu-aarch64`, so the NEON / dotprod paths and
the aarch64 libm execute on an x86 host. Without the tools the tests skip, except under CI (env
CI set), where a missing tool is a failure (.ci/run installs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import weightfile.fast

CC, QEMU = "aarch64-linux-gnu-gcc", "qemu-aarch64"
CSRC = Path(weightfile.fast.__file__).with_name("csrc")
#: This folder: driver_io.h, the drivers' shared input and output.
HERE = Path(__file__).parent
FLAGS = ("-O2", "-ffp-contract=off", "-march=armv8.2-a+dotprod", "-static", "-std=c11")
NEON_DOTPROD = 2  #: wf_simd_path() of the NEON + dotprod build (fast/csrc/cpu.h)


class QemuDriver:
    """The built driver: `run(op, params, *arrays)` returns its float32 results."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def run(self, op: str, params: list[int], *arrays: np.ndarray | bytes) -> np.ndarray:
        """Runs OP on int64 `params` then the arrays (float32, or raw bytes) in order."""
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = Path(tmp) / "in", Path(tmp) / "out"
            parts = [np.array(params, dtype="<i8").tobytes()]
            parts += [
                a if isinstance(a, bytes) else np.ascontiguousarray(a, "<f4").tobytes()
                for a in arrays
            ]
            src.write_bytes(b"".join(parts))
            cmd = [QEMU, str(self.binary), op, str(src), str(dst)]
            subprocess.run(cmd, check=True, timeout=120)
            return np.frombuffer(dst.read_bytes(), dtype="<f4").astype(np.float32)


def build_driver(driver_c: Path, out_dir: Path) -> QemuDriver:
    """Cross-compiles `driver_c` with every kernel source (the whole of fast/csrc must build for
    aarch64) and checks that it runs the NEON + dotprod path."""
    missing = [t for t in (CC, QEMU) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {missing} (see .ci/run)")
        pytest.skip(f"{missing} not installed")
    out = out_dir / driver_c.stem
    sources = [str(driver_c), *map(str, sorted(CSRC.glob("*.c")))]
    built = subprocess.run(
        [CC, *FLAGS, f"-I{CSRC}", f"-I{HERE}", "-o", str(out), *sources, "-lm", "-lpthread"],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    path = subprocess.run([QEMU, str(out), "path"], capture_output=True, text=True, check=True)
    assert int(path.stdout) == NEON_DOTPROD, "the driver was not built with the NEON dotprod path"
    return QemuDriver(out)


def same_bits(got: np.ndarray, want: np.ndarray | list) -> None:
    """Equal uint32 views; a NaN's sign and payload are the hardware's (Arm's default NaN is
    positive, x86's negative), so NaNs compare as NaN — but a NaN must be a NaN on both sides."""
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    assert got.shape == want.shape
    canon = np.uint32(0x7FC00000)
    g = np.where(np.isnan(got), canon, got.view(np.uint32))
    w = np.where(np.isnan(want), canon, want.view(np.uint32))
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, f"{bad.size} differ, first at {bad[0]}: {got[bad[0]]} vs {want[bad[0]]}"
