"""Measure how often the C library matters to the kestrel-board profile (spec/numerics.md
§board-c-matters).

Builds one probe twice -- for the host, and statically for aarch64 (run under qemu-aarch64) --
that writes expf, sinf, cosf and powf(1e6, x) of every STRIDE-th binary32 bit pattern, then
counts (a) the inputs where the two C libraries disagree and (b) those where glibc differs
from the correctly rounded value (float64 evaluation rounded once to float32).

    python tools/board_libm.py [--stride 97]

Needs cc, aarch64-linux-gnu-gcc and qemu-aarch64; takes a few minutes and ~1.4 GB of /tmp.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np

PROBE = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  uint64_t stride = strtoull(argv[2], 0, 10);
  FILE *o = fopen(argv[1], "wb");
  for (uint64_t b = 0; b < (1ull << 32); b += stride) {
    uint32_t u = (uint32_t)b, r[4]; float x, y[4];
    memcpy(&x, &u, 4);
    y[0] = expf(x); y[1] = sinf(x); y[2] = cosf(x); y[3] = powf(1e6f, x);
    memcpy(r, y, 16); fwrite(r, 4, 4, o);
  }
  return fclose(o);
}
"""
NAMES = ("expf", "sinf", "cosf", "powf(1e6, x)")
EXACT = (np.exp, np.sin, np.cos, lambda x: np.power(1e6, x))


def outputs(tmp: Path, stride: int, arm: bool) -> np.ndarray:
    src, exe, out = tmp / "probe.c", tmp / ("arm" if arm else "host"), tmp / "out.bin"
    src.write_text(PROBE)
    cc = ["aarch64-linux-gnu-gcc", "-static"] if arm else ["cc"]
    subprocess.run([*cc, "-O2", str(src), "-o", str(exe), "-lm"], check=True)
    run = ["qemu-aarch64", str(exe)] if arm else [str(exe)]
    subprocess.run([*run, str(out), str(stride)], check=True)
    return np.fromfile(out, dtype=np.uint32).reshape(-1, 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stride", type=int, default=97)
    stride = parser.parse_args().stride
    with tempfile.TemporaryDirectory() as tmp:
        host, arm = outputs(Path(tmp), stride, False), outputs(Path(tmp), stride, True)
    x = (np.arange(host.shape[0], dtype=np.uint64) * stride).astype(np.uint32).view(np.float32)
    finite = np.isfinite(x)
    print(f"{host.shape[0]:,} inputs (every {stride}th bit pattern)")
    for j, (name, exact) in enumerate(zip(NAMES, EXACT, strict=True)):
        h, a = host[:, j].view(np.float32), arm[:, j].view(np.float32)
        both_nan = np.isnan(h) & np.isnan(a)
        boards = int(((host[:, j] != arm[:, j]) & ~both_nan).sum())
        with np.errstate(all="ignore"):
            cr = exact(np.where(finite, x, 0).astype(np.float64)).astype(np.float32)
        rounding = int((finite & (cr.view(np.uint32) != host[:, j]) & ~np.isnan(h)).sum())
        print(f"{name}: host vs aarch64 glibc {boards:,}; glibc vs correctly rounded {rounding:,}")


if __name__ == "__main__":
    main()
