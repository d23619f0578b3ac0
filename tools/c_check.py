"""Check that the canonical profile, written in C from spec/numerics.md alone, equals the reference.

Usage: python tools/c_check.py [--stride N]

Builds tools/canonical_c/canonical.c twice -- with `-O2 -ffp-contract=off` (the contract) and
with `-O2 -march=native -ffp-contract=fast` (what a default optimising build may do) -- then
compares, bit for bit, against `weightfile.ref.numerics`:
* exp over every binary32 input (or every N-th bit pattern), NaN compared as NaN;
* the 8-lane dot on random vectors of random lengths with wide exponent ranges.
Prints the machine, the compiler and the mismatch counts of both builds.
"""

from __future__ import annotations

import argparse
import ctypes
import platform
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from weightfile.ref.numerics.exp import exp
from weightfile.ref.numerics.reduce import dot

SOURCE = Path(__file__).with_name("canonical_c") / "canonical.c"
FLAGS = {
    "contract (-O2 -ffp-contract=off)": ["-O2", "-ffp-contract=off"],
    "fused (-O2 -march=native -ffp-contract=fast)": ["-O2", "-march=native", "-ffp-contract=fast"],
}
CHUNK = 1 << 22


def build(flags: list[str], out: Path) -> ctypes.CDLL:
    subprocess.run(
        ["gcc", *flags, "-shared", "-fPIC", str(SOURCE), "-o", str(out), "-lm"], check=True
    )
    lib = ctypes.CDLL(str(out))
    f32p = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    lib.wf_exp_array.argtypes = [f32p, f32p, ctypes.c_int64]
    lib.wf_dot.argtypes = [f32p, f32p, ctypes.c_int64]
    lib.wf_dot.restype = ctypes.c_float
    return lib


def exp_mismatches(libs: list[ctypes.CDLL], stride: int) -> tuple[int, list[int]]:
    """(inputs, mismatching outputs per library) over all bit patterns with this stride."""
    total, bad = 0, [0] * len(libs)
    for base in range(0, 1 << 32, CHUNK * stride):
        bits = np.arange(base, min(base + CHUNK * stride, 1 << 32), stride, dtype=np.uint64)
        x = bits.astype(np.uint32).view(np.float32)
        want = exp(x)
        for i, lib in enumerate(libs):
            got = np.empty_like(x)
            lib.wf_exp_array(x, got, len(x))
            same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
            bad[i] += int(np.count_nonzero(~same))
        total += len(x)
    return total, bad


def dot_mismatches(lib: ctypes.CDLL, cases: int = 300) -> int:
    rng = np.random.default_rng(0)
    bad = 0
    for _ in range(cases):
        n = int(rng.integers(1, 200))
        a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
        b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
        want = dot(list(a), list(b))
        bad += int(
            np.float32(lib.wf_dot(a, b, n)).view(np.uint32) != np.float32(want).view(np.uint32)
        )
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=1)
    args = parser.parse_args()
    cc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"machine: {platform.machine()} {platform.processor()}; {cc}; numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        libs = [build(f, Path(tmp) / f"canonical{i}.so") for i, f in enumerate(FLAGS.values())]
        total, bad = exp_mismatches(libs, args.stride)
        for name, lib, n_bad in zip(FLAGS, libs, bad, strict=True):
            print(f"{name}: exp {n_bad} of {total} inputs differ; dot {dot_mismatches(lib)} of 300")


if __name__ == "__main__":
    main()
