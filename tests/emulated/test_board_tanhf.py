"""The board profile's tanhf against aarch64 glibc 2.36's own, run under qemu-user
(spec/numerics.md §board-vision-tanhf).

The board's GELU calls glibc's tanhf, whose aarch64 build fuses multiply-adds that an x86-64
build does not; the profile emulates the aarch64 build. The oracle here is that build itself:
a three-line C program linked statically against the cross toolchain's glibc (Debian 12's
aarch64 glibc 2.36, the packs' library) evaluates tanhf under qemu on arguments from every branch
of the algorithm. Without the tools the test skips, except under CI (as tests/emulated does).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from weightfile.ref.qwen3_vl.board.tanhf import tanhf

from . import CC, QEMU

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    float x;
    while (fread(&x, 4, 1, in) == 1) {
        volatile float v = x;
        float y = tanhf(v);
        fwrite(&y, 4, 1, out);
    }
    return fclose(out);
}
"""


def arguments() -> np.ndarray:
    """Normal samples at six scales (every expm1f branch: k = 0, ±1, larger k; |x| ≥ 1; ≥ 22),
    the branch thresholds and their neighbours, zeros, tiny and subnormal values, infinities."""
    rng = np.random.default_rng(20261206)
    xs = [rng.standard_normal(800) * s for s in (1e-3, 0.1, 0.4, 1.0, 4.0, 30.0)]
    edges = np.array([0x3EB17218, 0x3F851592, 0x3F800000, 0x41B00000, 0x24000000, 0x00000001],
                     np.uint32)  # fmt: skip
    near = np.concatenate([edges - 1, edges, edges + 1]).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-30, -1e-20], np.float32)
    return np.concatenate([*xs, near, -near, special]).astype(np.float32)


def aarch64_tanhf(xs: np.ndarray, tmp: Path) -> np.ndarray:
    missing = [t for t in (CC, QEMU) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {missing} (see .ci/run)")
        pytest.skip(f"{missing} not installed")
    (tmp / "t.c").write_text(PROGRAM)
    subprocess.run(
        [CC, "-O2", "-static", "-o", str(tmp / "t"), str(tmp / "t.c"), "-lm"], check=True
    )
    xs.tofile(tmp / "in")
    subprocess.run(
        [QEMU, str(tmp / "t"), str(tmp / "in"), str(tmp / "out")], check=True, timeout=120
    )
    return np.fromfile(tmp / "out", dtype=np.float32)


def test_the_emulation_is_aarch64_glibc_tanhf(tmp_path: Path) -> None:
    """Every argument, bit for bit, by the reference (the first ~5,000) and by the C kernel (all
    of them, 200,000 more uniform bit patterns of |x| < 22 besides); and the arguments include
    some where x86-64's glibc differs (so a profile calling the host's tanhf would fail here)."""
    from weightfile.fast.qwen3_vl.board.ops import tanhf as fast_tanhf

    rng = np.random.default_rng(7)
    wide = rng.integers(0, 0x41B00000, 200_000, dtype=np.uint32)
    wide = (wide | (rng.integers(0, 2, wide.size, dtype=np.uint32) << 31)).view(np.float32)
    xs = np.concatenate([arguments(), wide])
    want = aarch64_tanhf(xs, tmp_path)
    c = fast_tanhf(xs)
    bad_c = np.flatnonzero(c.view(np.uint32) != want.view(np.uint32))
    assert bad_c.size == 0, f"C: {bad_c.size} differ, first tanhf({xs[bad_c[0]]!r})"
    xs, want = xs[: arguments().size], want[: arguments().size]
    got = np.array([tanhf(x) for x in xs], np.float32)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, (
        f"{bad.size} differ, first tanhf({xs[bad[0]]!r}): {got[bad[0]]!r} vs {want[bad[0]]!r}"
    )
    host = ctypes.CDLL(ctypes.util.find_library("m")).tanhf
    host.restype, host.argtypes = ctypes.c_float, [ctypes.c_float]
    on_host = np.array([host(float(x)) for x in xs], np.float32)
    assert np.any(on_host.view(np.uint32) != want.view(np.uint32))
