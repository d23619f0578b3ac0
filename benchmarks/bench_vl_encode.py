"""Image-encode time of one 448×448 image (28×28 = 784 patches, 196 image tokens) on a tower of
the Qwen3-VL-2B geometry (24 blocks, D 1024, 16 heads, Iv 4096, O 2048, a 48×48 position table,
DeepStack [5, 11, 17]): ref/qwen3_vl vs fast/qwen3_vl on the same random weights (Q8_0 block
matrices, F32 patch embedding and mergers). Not a test:

    python benchmarks/bench_vl_encode.py [--threads 1 2] [--ref-grid 4]

The fast figure is the whole tower on the 448×448 image, measured, with the time in the vision
linears and their achieved GFLOP/s. The reference is pure Python per element (hours for this
tower), so it runs block 0 on a `--ref-grid`² patch image beside the fast block on the same
input, and the bits of the two are compared.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from weightfile.fast.numerics.matrix import FastMatrix
from weightfile.fast.qwen3_vl.vision import FastVisionTower
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionTower, patch_coordinates

CONFIG = VisionConfig(
    depth=24, hidden_size=1024, num_heads=16, intermediate_size=4096, out_hidden_size=2048,
    num_position_embeddings=2304, deepstack_visual_indexes=(5, 11, 17),
)  # fmt: skip
GRID = (1, 28, 28)


def q8(rng, rows: int, cols: int):
    """(FastMatrix, QuantMatrix) of the same random Q8_0 legacy matrix."""
    codes = rng.integers(-127, 128, (rows, cols), dtype=np.int8)
    scales = rng.uniform(1e-3, 3e-3, (rows, cols // 32)).astype(np.float16)
    blocks = np.empty((rows, cols // 32, 34), np.uint8)
    blocks[:, :, :2] = scales.view(np.uint8).reshape(rows, cols // 32, 2)
    blocks[:, :, 2:] = codes.view(np.uint8).reshape(rows, cols // 32, 32)
    fast = FastMatrix("q8_0", blocks.reshape(-1), rows, cols)
    return fast, QuantMatrix(codes, scales.view(np.uint16))


def f32(rng, rows: int, cols: int):
    w = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
    return FastMatrix("f32", w.view(np.uint8).reshape(-1), rows, cols), DenseMatrix(w)


def vec(rng, n: int, loc: float = 0.0) -> np.ndarray:
    return (loc + 0.05 * rng.standard_normal(n)).astype(np.float32)


def weights(rng):
    c = CONFIG
    d, vf, vo, mi = c.hidden_size, c.intermediate_size, c.out_hidden_size, c.merged_dim
    fast_blocks, ref_blocks = [], []
    for _ in range(c.depth):
        m = {k: q8(rng, r, cc) for k, (r, cc) in
             dict(qkv=(3 * d, d), proj=(d, d), fc1=(vf, d), fc2=(d, vf)).items()}  # fmt: skip
        v = dict(
            norm1_w=vec(rng, d, 1), norm1_b=vec(rng, d), qkv_b=vec(rng, 3 * d),
            proj_b=vec(rng, d), norm2_w=vec(rng, d, 1), norm2_b=vec(rng, d),
            fc1_b=vec(rng, vf), fc2_b=vec(rng, d),
        )  # fmt: skip
        fast_blocks.append(VisionBlockWeights(**{k: a for k, (a, _) in m.items()}, **v))
        ref_blocks.append(VisionBlockWeights(**{k: b for k, (_, b) in m.items()}, **v))

    def merger(norm: int):
        (f1, r1), (f2, r2) = f32(rng, mi, mi), f32(rng, vo, mi)
        n = (vec(rng, norm, 1), vec(rng, norm))
        return (
            MergerWeights(*n, f1, vec(rng, mi), f2, vec(rng, vo)),
            MergerWeights(*n, r1, vec(rng, mi), r2, vec(rng, vo)),
        )

    final = merger(d)
    ds = [merger(mi) for _ in c.deepstack_visual_indexes]
    pe, rpe = f32(rng, d, c.patch_dim)
    table = (0.02 * rng.standard_normal((c.num_position_embeddings, d))).astype(np.float32)
    bias = vec(rng, d)
    fw = VisionWeights(pe, bias, table, tuple(fast_blocks), final[0], tuple(f for f, _ in ds))
    rw = VisionWeights(rpe, bias, table, tuple(ref_blocks), final[1], tuple(r for _, r in ds))
    return fw, rw


def linear_flops() -> float:
    """2·rows·cols per patch (per window for the mergers) over every linear of the tower."""
    c = CONFIG
    d, vf, vo, mi, n = c.hidden_size, c.intermediate_size, c.out_hidden_size, c.merged_dim, 784
    block = 3 * d * d + d * d + vf * d + d * vf
    merge = mi * mi + vo * mi
    return 2.0 * (n * (d * c.patch_dim + c.depth * block) + (n // 4) * merge * 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--ref-grid", type=int, default=4, help="side of the image the ref block gets")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    fw, rw = weights(rng)
    pv = rng.uniform(-1, 1, (784, CONFIG.patch_dim)).astype(np.float32)
    image = VisionInput(pv, GRID)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
    small = VisionInput(pv[:4], (1, 2, 2))
    for th in args.threads:
        tower = FastVisionTower(CONFIG, fw, threads=th)
        spent = [0.0]
        plain = tower.linear

        def timed(m, b, x, plain=plain, spent=spent):
            t = time.perf_counter()
            y = plain(m, b, x)
            spent[0] += time.perf_counter() - t
            return y

        tower.forward([small])  # warm: library, tables, weight pages
        tower.linear = timed
        t = time.perf_counter()
        out = tower.forward([image])
        total = time.perf_counter() - t
        gf = linear_flops() / spent[0] / 1e9
        print(
            f"fast, {th} thread(s): 448x448 encode {total:.2f} s ({out.embeds.shape[0]} tokens); "
            f"linears {spent[0]:.2f} s = {gf:.1f} GFLOP/s",
            flush=True,
        )
    g = args.ref_grid
    if g:
        n = g * g
        coords, seg = patch_coordinates(g, g), [range(n)]
        fast = FastVisionTower(CONFIG, fw, threads=1)
        x0 = fast.linear(fw.patch_embed, fw.patch_bias, pv[:n])  # the block input
        cos, sin = fast.rotary.cos_sin(coords)
        so, sl = np.zeros(n, np.int64), np.full(n, n, np.int64)
        t = time.perf_counter()
        xf = fast.block(0, fw.blocks[0], x0, cos, sin, so, sl, None)
        fast_block = time.perf_counter() - t
        ref = VisionTower(CONFIG, rw)
        t = time.perf_counter()
        rows = ref.block(0, rw.blocks[0], [list(r) for r in x0], coords, seg, lambda *_: None)
        ref_block = time.perf_counter() - t
        same = np.array_equal(np.array(rows, np.float32).view(np.uint32), xf.view(np.uint32))
        print(
            f"one block on {n} patches, 1 thread: ref {ref_block:.1f} s, fast {fast_block:.4f} s "
            f"({ref_block / fast_block:.0f}x); same bits: {same}",
            flush=True,
        )


if __name__ == "__main__":
    main()
