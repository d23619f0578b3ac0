"""The Qwen3.5 vision tower's image encode beside a Qwen3-VL file's (issue 29; spec/models.md
§qwen35-vision): the same bench image, in the same run, through a synthetic tower of the
official Qwen3.5 / Qwen3.6 geometry on the fast engine.

A `.ninfer` vision component is decoded to float32 matrices at bind time (spec/models.md
§qwen35-activations), so the synthetic tower is seeded float32 weights in memory — 1.8 GB for the
official geometry — run by `fast_tower` (fast/qwen3_vl/dense.py), the tower `run --image
--engine fast` uses on a `.ninfer` file. Its GFLOP/s is the encode's multiply-adds (linears and
attention, fc2 unpadded: weightfile/bench/vision.py `work_of`) × 2 ÷ its seconds, the same
measure the bench gives the Qwen3-VL file's fast encode rows.

Its linears are F32 products, a rounded multiply and an add per term (spec/numerics.md §no-fma,
§dot), while the Qwen3-VL file's are Q8_0 integer dots, so beside the rows the section gives the
bound of the former: `mul_add_peak_gflop_per_s`, one core's separate multiply-then-add peak
measured by fast/csrc/mul_add_peak.c (operands in registers, no memory), the most any F32 product
on one thread can reach on this machine.

Beside a real-size Qwen3-VL tower (hidden ≥ `OFFICIAL_FROM`) the tower is the official
geometry; beside a smaller one (the tests' `tiny-vl-*`) it is that tower's own sizes with the
Qwen3.5 switches, so the comparison runs in seconds there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)
from weightfile.ref.qwen3_vl.vision import VisionInput

QWEN35_NOTE = (
    "image encode, qwen35_vision: the same image through a seeded float32 Qwen3.5 vision tower "
    "(the official geometry beside a real-size Qwen3-VL tower; weightfile/bench/vision35.py) on "
    "the fast engine; gflop_per_s of every encode row is 2 × its multiply-adds (linears and "
    "attention) ÷ its seconds"
)

#: spec/models.md §qwen35-vision: depth 27, width 1152, MLP 4304, 16 heads of 72, patch 16, two
#: frames per patch, 2×2 merge, a 48×48 position table; the merger's output is the text width,
#: here Qwen3.6-27B's 5120.
QWEN35_VISION = VisionConfig(
    depth=27, hidden_size=1152, num_heads=16, intermediate_size=4304, out_hidden_size=5120,
    num_position_embeddings=2304, deepstack_visual_indexes=(), patch_size=16,
    temporal_patch_size=2, spatial_merge_size=2, merger_postshuffle_norm=False,
    merger_gelu="erf",
)  # fmt: skip
#: Steps of one mul_add_peak call (below 2^24, so its lanes stay exact) and calls (best of).
PEAK_STEPS = 1 << 23
PEAK_CALLS = 3
#: A Qwen3-VL tower at least this wide is compared with the official geometry.
OFFICIAL_FROM = 512
SEED = 29


def geometry_beside(c: VisionConfig) -> VisionConfig:
    """The Qwen3.5 tower compared with the Qwen3-VL tower `c` (module docstring)."""
    if c.hidden_size >= OFFICIAL_FROM:
        return QWEN35_VISION
    return replace(c, deepstack_visual_indexes=(), merger_postshuffle_norm=False,
                   merger_gelu="erf")  # fmt: skip


def seeded_weights(c: VisionConfig) -> VisionWeights:
    """float32 weights: matrices N(0, 1/cols) (so activations keep their scale through 27
    blocks), biases N(0, 0.02), LayerNorm weights 1 + N(0, 0.02)."""
    rng = np.random.default_rng(SEED)

    def matrix(rows: int, cols: int) -> DenseMatrix:
        m = rng.standard_normal((rows, cols), dtype=np.float32)
        m *= np.float32(1 / np.sqrt(cols))
        return DenseMatrix(m)

    def vec(n: int, around: float = 0.0) -> np.ndarray:
        return (np.float32(around) + np.float32(0.02) * rng.standard_normal(n, np.float32)).astype(
            np.float32
        )

    d, f, mi = c.hidden_size, c.intermediate_size, c.merged_dim

    def block() -> VisionBlockWeights:
        return VisionBlockWeights(
            vec(d, 1.0), vec(d), matrix(3 * d, d), vec(3 * d), matrix(d, d), vec(d),
            vec(d, 1.0), vec(d), matrix(f, d), vec(f), matrix(d, f), vec(d),
        )  # fmt: skip

    blocks = tuple(block() for _ in range(c.depth))
    merger = MergerWeights(
        vec(d, 1.0), vec(d), matrix(mi, mi), vec(mi), matrix(c.out_hidden_size, mi),
        vec(c.out_hidden_size),
    )  # fmt: skip
    pos = rng.standard_normal((c.num_position_embeddings, d), dtype=np.float32)
    return VisionWeights(matrix(d, c.patch_dim), vec(d), pos, blocks, merger, ())


def mul_add_peak() -> float | None:
    """One core's separate multiply-then-add GFLOP/s (fast/csrc/mul_add_peak.c), best of
    PEAK_CALLS; None without the C kernels or a vector path. The probe returns 0.5 × lanes ×
    steps, so its flops (a product and an add per lane and step) are 4 × its value."""
    from weightfile.fast._native import library

    lib = library()
    best = None
    for _ in range(0 if lib is None else PEAK_CALLS):
        start = time.perf_counter()
        value = lib.wf_mul_add_peak(PEAK_STEPS)
        rate = 4 * value / (time.perf_counter() - start) / 1e9
        best = rate if value and (best is None or rate > best) else best
    return best


def encode_rows(
    c: VisionConfig, image: VisionInput, threads: Sequence[int], reps: int, flops: int
) -> list[dict[str, Any]]:
    """One row per thread count: the fast tower's best of `reps` encodes after an untimed
    warm-up on the image's first merge window, and its GFLOP/s."""
    from weightfile.fast.qwen3_vl.dense import fast_tower

    from .vision import encode_row, warm_up_image

    weights = seeded_weights(c)
    rows = []
    for n in threads:
        tower = fast_tower(c, weights, n)
        tower.forward([warm_up_image(image, c.spatial_merge_size)])
        samples = []
        for _ in range(reps):
            start = time.perf_counter()
            tower.forward([image])
            samples.append(time.perf_counter() - start)
        row = encode_row("fast", n, "measured", samples)
        rows.append(row | {"gflop_per_s": flops / row["seconds"] / 1e9})
    return rows


def qwen35_section(
    beside: VisionConfig, side: int, threads: Sequence[int], reps: int
) -> dict[str, Any]:
    """The `image_encode.qwen35_vision` member: the geometry, the image, the work and the rows."""
    from .vision import bench_image, work_of

    c = geometry_beside(beside)
    arch = {"vis_patch": c.patch_size, "vis_merge": c.spatial_merge_size,
            "vis_temporal": c.temporal_patch_size,
            "vis_max_pos": c.num_position_embeddings}  # fmt: skip
    prepared = bench_image(arch, side)
    image = VisionInput(prepared.pixel_values, prepared.grid_thw)
    work = work_of(c, prepared.pixel_values.shape[0], pad=1)
    flops = 2 * work.total
    return {
        "geometry": {"official": c == QWEN35_VISION, "depth": c.depth, "hidden": c.hidden_size,
                     "intermediate": c.intermediate_size, "heads": c.num_heads,
                     "head_dim": c.head_dim, "patch": c.patch_size,
                     "merge": c.spatial_merge_size, "out_hidden": c.out_hidden_size},
        "image": {"side": side, "grid": list(prepared.grid_thw),
                  "patches": int(prepared.pixel_values.shape[0]), "tokens": prepared.n_tokens},
        "flops_per_image": {"linears": 2 * work.linears, "attention": 2 * work.attention,
                            "total": flops},
        "rows": encode_rows(c, image, threads, reps, flops),
        "mul_add_peak_gflop_per_s": mul_add_peak(),
    }  # fmt: skip
