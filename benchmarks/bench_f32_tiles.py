"""The F32 products of the Qwen3.5 vision tower, another build's kernels against this one's
(branch tower35; docs/performance.md, the Qwen3.5 tower after the 2B encode's speed-ups).

Not a test: `python benchmarks/bench_f32_tiles.py --old-csrc DIR [--depth 9] [--rounds 3]`, DIR
the fast/csrc folder of the build to compare with (e.g. a `git worktree` of main). Both libraries
are loaded in one process and alternated, best of `--rounds`, 1 thread, on the kernel path in use:
`wf_matmat_f32` on the tower's four block linears over the 784 patches of the 448×448 bench image
(official geometry, weightfile/bench/vision35.py), then the whole tower cut to `--depth` blocks
with its linears through one library or the other (attention, GELU and the rest always this
build's). The outputs must be the same bits. Prints seconds, GFLOP/s and old ÷ new.
"""

from __future__ import annotations

import argparse
import ctypes
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import weightfile.fast.numerics.matrix as matrix
from weightfile.bench import vision35
from weightfile.bench.machine import describe_machine
from weightfile.bench.vision import bench_image, work_of
from weightfile.fast import _native
from weightfile.fast._native import address
from weightfile.fast.qwen3_vl.dense import fast_tower
from weightfile.ref.qwen3_vl.vision import VisionInput

LINEARS = {"qkv": (3456, 1152), "proj": (1152, 1152), "fc1": (4304, 1152), "fc2": (1152, 4304)}
PATCHES = 784


def old_library(csrc: Path, isa: str) -> ctypes.CDLL:
    """The other build, with the two prototypes the products call, on the same path."""
    lib = ctypes.CDLL(str(_native.build(_native.compiler(), sorted(csrc.glob("*.c")),
                                        _native.cache_dir())))  # fmt: skip
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    lib.wf_matmat_f32.argtypes = (p, p, i64, p, i32)
    lib.wf_threads_for.argtypes = (i32, i64, i64)
    lib.wf_threads_for.restype = i32
    lib.wf_isa_usable.argtypes = (i32,)
    _native.set_isa(lib, isa)
    return lib


def alternate(libs: dict[str, ctypes.CDLL], run, rounds: int) -> tuple[dict, dict]:
    best, out = dict.fromkeys(libs, float("inf")), {}
    for _ in range(rounds):
        for name, lib in libs.items():
            start = time.perf_counter()
            out[name] = run(lib)
            best[name] = min(best[name], time.perf_counter() - start)
    return best, out


def report(what: str, flops: int, best: dict, out: dict) -> None:
    same = np.array_equal(out["old"].view(np.uint32), out["new"].view(np.uint32))
    rates = "  ".join(f"{k} {s:.4f} s {flops / s / 1e9:6.1f} GFLOP/s" for k, s in best.items())
    print(f"{what:28s} {rates}  ×{best['old'] / best['new']:.2f}  same bits: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-csrc", type=Path, required=True)
    ap.add_argument("--depth", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    new = _native.library()
    libs = {"old": old_library(a.old_csrc, _native.current_isa(new)), "new": new}
    print(describe_machine(), "· path", _native.current_isa(new), "· 1 thread")
    rng = np.random.default_rng(29)
    for name, (rows, cols) in LINEARS.items():
        w = rng.standard_normal((rows, cols), dtype=np.float32)
        x = rng.standard_normal((PATCHES, cols), dtype=np.float32)
        m = matrix.FastMatrix("f32", w.reshape(-1).view(np.uint8), rows, cols)

        def product(lib, m=m, x=x, rows=rows):
            y = np.empty((PATCHES, rows), np.float32)
            lib.wf_matmat_f32(m._address, address(x), PATCHES, address(y), 1)
            return y

        report(
            f"{name} [{rows}×{cols}]",
            2 * rows * cols * PATCHES,
            *alternate(libs, product, a.rounds),
        )
    c = replace(vision35.QWEN35_VISION, depth=a.depth)
    arch = {"vis_patch": c.patch_size, "vis_merge": c.spatial_merge_size,
            "vis_temporal": c.temporal_patch_size,
            "vis_max_pos": c.num_position_embeddings}  # fmt: skip
    prepared = bench_image(arch)
    image = VisionInput(prepared.pixel_values, prepared.grid_thw)
    tower = fast_tower(c, vision35.seeded_weights(c), 1)
    tower.forward([image])  # untimed warm-up

    def encode(lib):
        matrix.kernels = lambda: lib  # the products' library; the tower's other ops keep theirs
        return tower.forward([image]).embeds

    flops = 2 * work_of(c, PATCHES, pad=1).total
    report(f"tower, {a.depth} blocks", flops, *alternate(libs, encode, a.rounds))


if __name__ == "__main__":
    main()
