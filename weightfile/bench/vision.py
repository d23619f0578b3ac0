"""Image-encode numbers of a Qwen3-VL file (issue 18 item 8): the time to encode one image through
the vision tower and the vision linears' achieved GFLOP/s, per engine and thread count.

The image is a seeded 448×448 RGB picture through the Hugging Face recipe (weightfile/frontend/
image.py): grid 28×28 = 784 patches, 196 image tokens after the 2×2 merge (spec/models.md
§qwen3-vl).

Engines come from the file's row of the family registry (weightfile/families/registry.py):

* fast: the row's fast model `encode_images` at each thread count, when the row has one. Until
  then the report says so and the image is encoded by ref (the `engine` field names what ran).
* ref: the family's reference tower, pure Python (spec/numerics.md §vision). Above
  `REF_MEASURE_LIMIT` multiply-adds per image it is *estimated* as the text decode is
  (weightfile/bench/engines.py): each linear's reference product timed on its first
  `engines.ESTIMATE_ROWS` rows and scaled to all rows and all patches, and the attention of one
  query over every patch of the image timed and scaled to every query, head and block. LayerNorm,
  GELU, the rotary and the position rows (O(N·D), against O(N·D²) for the linears) are not
  counted.

The vision linears' GFLOP/s (2 FLOPs per multiply-add): for fast, the C Q8_0 matrix-matrix product
(`FastMatrix.matmat`, the product the fast tower runs over all patches) on block 0 of each
`v_q8_*` matrix with all patches as rows, at every thread count (measured whenever the C kernels
exist, with or without a fast tower); for ref, when the reference encoded the image, the
estimate's own rate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.families import vqf_family
from weightfile.fast.backend import FAST
from weightfile.frontend.image import PreparedImage, preprocess, settings_for
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.numerics.attention import attend_head
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.ref.qwen3_vl.bind_vqf import vision_config_from_arch
from weightfile.ref.qwen3_vl.config import VisionConfig
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import CANONICAL

from . import engines

#: The bench image: 448×448 pixels, 784 patches, 196 image tokens (issue 18 item 8).
IMAGE_SIDE = 448
IMAGE_SEED = 18
#: Above this many multiply-adds per image the reference encode is estimated, not run.
REF_MEASURE_LIMIT = 2_000_000
#: Timed runs of one encode at most: a real-size encode takes seconds even on the fast engine.
MAX_REPETITIONS = 3
#: For scale only, never a target: Rockchip's rknn-llm benchmark table (RK3588 NPU, Qwen3-VL-2B).
RKNN_NOTE = (
    "for scale, not measured here: Rockchip's rknn-llm benchmark table gives 2.08 s to encode a "
    "448×448 image with Qwen3-VL-2B on the RK3588 NPU"
)
#: The block matrices (spec/vqf.md §vision-tensors): entry name -> (rows, cols) from the tower's
#: config.
BLOCK_LINEARS = ("v_q8_qkv", "v_q8_proj", "v_q8_fc1", "v_q8_fc2")


def is_vision_file(vqf: VQFFile) -> bool:
    return bool(vqf.header.arch.get("vis_depth"))


def tower_config(arch: dict[str, Any]) -> VisionConfig:
    """The tower of a file's spec/vqf.md §arch-semantics arch fields (the binder's own reading)."""
    return vision_config_from_arch(arch, int(arch["dim"]))


def bench_image(arch: dict[str, Any], side: int = IMAGE_SIDE) -> PreparedImage:
    """A seeded side×side RGB picture prepared by the `hf` recipe with the file's geometry."""
    rgb = np.random.default_rng(IMAGE_SEED).integers(0, 256, (side, side, 3), dtype=np.uint8)
    return preprocess(rgb, settings_for(arch), "hf")


def block_shapes(c: VisionConfig, pad: int = 32) -> dict[str, tuple[int, int]]:
    """(rows, cols) of each block matrix; fc2's columns padded to a multiple of `pad` (32 in a
    VQF file; 1, none, for the F32 matrices of a `.ninfer` tower)."""
    vh, vf = c.hidden_size, c.intermediate_size
    vfp = -(-vf // pad) * pad
    return {"v_q8_qkv": (3 * vh, vh), "v_q8_proj": (vh, vh), "v_q8_fc1": (vf, vh),
            "v_q8_fc2": (vh, vfp)}  # fmt: skip


def dense_shapes(c: VisionConfig) -> dict[str, tuple[int, int, int]]:
    """F32 linears: entry -> (rows, cols, 0 per patch / 1 per merge window), counted once per
    image (the DeepStack matrices once per index)."""
    mi, vo = c.merged_dim, c.out_hidden_size
    return {"v_patch_embed": (c.hidden_size, c.patch_dim, 0), "v_merger_f1w": (mi, mi, 1),
            "v_merger_f2w": (vo, mi, 1), "v_ds_f1w": (mi, mi, 1),
            "v_ds_f2w": (vo, mi, 1)}  # fmt: skip


def matrices_of(c: VisionConfig, name: str) -> int:
    """How many matrices of an F32 entry one image goes through."""
    return len(c.deepstack_visual_indexes) if name.startswith("v_ds_") else 1


@dataclass(frozen=True)
class Work:
    """Multiply-adds of one encode of `patches` patches (one image)."""

    linears: int
    attention: int  # q·k and p·v, per head over the image's patches

    @property
    def total(self) -> int:
        return self.linears + self.attention


def work_of(c: VisionConfig, patches: int, pad: int = 32) -> Work:
    windows = patches // c.spatial_merge_size**2
    linears = sum(r * k for r, k in block_shapes(c, pad).values()) * patches * c.depth
    for name, (rows, cols, per_window) in dense_shapes(c).items():
        linears += rows * cols * (windows if per_window else patches) * matrices_of(c, name)
    attention = 2 * patches * patches * c.hidden_size * c.depth
    return Work(linears, attention)


# --- ref ---------------------------------------------------------------------------------------


def best_of(fn: Any, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):  # the first call also pays for warming caches
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def leading_dense(vqf: VQFFile, name: str, cols: int) -> DenseMatrix:
    """The first ESTIMATE_ROWS rows of an F32 matrix entry (row-major, spec/vqf.md
    §vision-tensors)."""
    rows = engines.ESTIMATE_ROWS
    head = bytes(vqf.payload(vqf.entry(name))[: rows * cols * 4])
    return DenseMatrix(np.frombuffer(head, np.float32).reshape(-1, cols).copy())


def ref_linear_seconds(vqf: VQFFile, c: VisionConfig, patches: int) -> dict[str, float]:
    """Estimated reference seconds of each linear entry over one image (all its matrices)."""
    kernels = kernels_for(CANONICAL)
    windows = patches // c.spatial_merge_size**2
    out: dict[str, float] = {}
    for name, (rows, cols) in block_shapes(c).items():
        m = engines.leading_rows(vqf, name, rows, cols)
        x = [np.float32(v) for v in np.linspace(-1, 1, cols, dtype=np.float32)]
        t = best_of(lambda m=m, x=x: kernels.matvec(m, x))
        out[name] = t * rows / m.shape[0] * patches * c.depth
    for name, (rows, cols, per_window) in dense_shapes(c).items():
        if not matrices_of(c, name):
            continue
        m = leading_dense(vqf, name, cols)
        x = [np.float32(v) for v in np.linspace(-1, 1, cols, dtype=np.float32)]
        t = best_of(lambda m=m, x=x: kernels.matvec(m, x))
        count = (windows if per_window else patches) * matrices_of(c, name)
        out[name] = t * rows / m.shape[0] * count
    return out


def ref_attention_seconds(c: VisionConfig, patches: int) -> float:
    """One query head over every patch of the image, timed, times queries · heads · blocks."""
    kernels = kernels_for(CANONICAL)
    rng = np.random.default_rng(IMAGE_SEED)
    rows = rng.standard_normal((patches, c.head_dim), dtype=np.float32)
    keys = [[np.float32(v) for v in r] for r in rows]
    q = keys[0]
    t = best_of(lambda: attend_head(q, keys, keys, kernels.dot, kernels.softmax), repeats=2)
    return t * patches * c.num_heads * c.depth


def ref_estimate(vqf: VQFFile, patches: int) -> tuple[float, dict[str, float]]:
    """(estimated reference seconds of one image's encode, seconds per linear entry)."""
    c = tower_config(vqf.header.arch)
    parts = ref_linear_seconds(vqf, c, patches)
    return sum(parts.values()) + ref_attention_seconds(c, patches), parts


def ref_encode(vqf: VQFFile, image: VisionInput, repetitions: int) -> dict[str, Any]:
    """The reference encode row: measured on a small tower and image, else estimated."""
    c = tower_config(vqf.header.arch)
    patches = image.pixel_values.shape[0]
    if work_of(c, patches).total <= REF_MEASURE_LIMIT:
        model = vqf_family(vqf).reference_model(vqf)
        samples = [timed_encode(model, image) for _ in range(min(repetitions, MAX_REPETITIONS))]
        return encode_row("ref", 1, "measured", samples)
    total, parts = ref_estimate(vqf, patches)
    return encode_row("ref", 1, "estimated", [total]) | {"linear_seconds": parts}


# --- fast --------------------------------------------------------------------------------------


def timed_encode(model: Any, image: VisionInput) -> float:
    start = time.perf_counter()
    model.encode_images([image])
    return time.perf_counter() - start


def warm_up_image(image: VisionInput, merge: int) -> VisionInput:
    """The image's first merge window alone (its first merge² rows are a merge×merge grid in
    merge-window order): a warm-up that loads the kernels and touches every weight without a
    whole encode."""
    return VisionInput(image.pixel_values[: merge * merge], (1, merge, merge))


def encode_row(engine: str, threads: int, method: str, samples: Sequence[float]) -> dict[str, Any]:
    return {"engine": engine, "threads": threads, "method": method,
            "seconds": min(samples), "samples_seconds": list(samples)}  # fmt: skip


def fast_vision_model(vqf: VQFFile, threads: int) -> Any | None:
    """The family's fast model with a vision tower, or None (no fast row, or no C kernels)."""
    family = vqf_family(vqf)
    if not family.has_fast or engines.fast_open_model() is None:
        return None
    model = family.fast_model(vqf, threads=threads)
    return model if hasattr(model, "encode_images") else None


def fast_linear_rates(
    vqf: VQFFile, c: VisionConfig, patches: int, threads: Sequence[int]
) -> list[dict[str, Any]] | None:
    """GFLOP/s of the C Q8_0 matrix-matrix product on block 0 of each block matrix over all
    patches; None without the C kernels."""
    matrix_from_entry = engines.fast_matrix_from_entry()
    if matrix_from_entry is None:
        return None
    rng = np.random.default_rng(IMAGE_SEED)
    out = []
    for name, (rows, cols) in block_shapes(c).items():
        m = matrix_from_entry(vqf, name, rows, cols, layer=0)
        x = rng.standard_normal((patches, cols), dtype=np.float32)
        m.matmat(x[:1])  # warm: the library's first call, the matrix's first-touch pages
        flops = 2 * rows * cols * patches
        rates = {
            str(n): flops / best_of(lambda n=n, m=m, x=x: m.matmat(x, threads=n)) / 1e9
            for n in threads
        }
        out.append(linear_row(name, rows, cols, patches, "fast", "measured", flops, rates))
    return out


def linear_row(name, rows, cols, patches, engine, method, flops, rates) -> dict[str, Any]:
    return {"tensor": name, "rows": rows, "cols": cols, "patches": patches, "engine": engine,
            "method": method, "flops": flops, "gflop_per_s": rates}  # fmt: skip


def ref_linear_rates(vqf: VQFFile, c: VisionConfig, patches: int, ref: dict[str, Any]):
    """The reference's rate per block matrix: its FLOPs over all blocks ÷ its seconds."""
    parts = ref.get("linear_seconds")
    if parts is None:  # measured whole: time one product per matrix instead
        parts = ref_linear_seconds(vqf, c, patches)
    out = []
    for name, (rows, cols) in block_shapes(c).items():
        flops = 2 * rows * cols * patches
        rate = flops * c.depth / parts[name] / 1e9
        out.append(linear_row(name, rows, cols, patches, "ref", "estimated", flops, {"1": rate}))
    return out


# --- the report section --------------------------------------------------------------------------


def _fast_encode(
    vqf: VQFFile,
    c: VisionConfig,
    image: VisionInput,
    threads: Sequence[int],
    reps: int,
    rows: list[dict[str, Any]],
    linears: list[dict[str, Any]],
    notes: list[str],
) -> None:
    """The fast tower's encode rows per thread count (none when the family has no fast tower)
    and the C Q8_0 product's vision-linear rows, appended to `rows`, `linears` and `notes`."""
    patches = image.pixel_values.shape[0]
    for n in threads:
        model = fast_vision_model(vqf, n)
        if model is None:
            break
        # untimed: the first call's costs (library load, first-touch pages)
        model.encode_images([warm_up_image(image, c.spatial_merge_size)])
        rows.append(encode_row("fast", n, "measured", [timed_encode(model, image)
                                                       for _ in range(reps)]))  # fmt: skip
    # the C product the fast tower runs needs only the kernels, not the tower
    fast_linears = fast_linear_rates(vqf, c, patches, threads)
    if fast_linears is None:
        notes.append("vision linears GFLOP/s (fast): n/a (no C kernels)")
    linears += fast_linears or []


def _ref_encode(
    vqf: VQFFile,
    c: VisionConfig,
    image: VisionInput,
    reps: int,
    rows: list[dict[str, Any]],
    linears: list[dict[str, Any]],
    notes: list[str],
) -> None:
    """The reference's encode row (timed, or estimated on a large tower) and its vision-linear
    rows, appended to `rows`, `linears` and `notes`."""
    patches = image.pixel_values.shape[0]
    ref = ref_encode(vqf, image, reps)
    rows.append({k: v for k, v in ref.items() if k != "linear_seconds"})
    linears += ref_linear_rates(vqf, c, patches, ref)
    if ref["method"] == "estimated":
        notes.append(
            "ref image encode estimated: each vision linear's reference product timed on its "
            f"first {engines.ESTIMATE_ROWS} rows and scaled to all rows and patches, plus one "
            "query's attention over the image scaled to every query, head and block "
            "(LayerNorm, GELU, rotary and position rows not counted)"
        )


def image_section(
    vqf: VQFFile,
    backend: Backend,
    threads: Sequence[int],
    repetitions: int,
    side: int = IMAGE_SIDE,
) -> tuple[dict[str, Any], list[str]]:
    """The report's `image_encode` section (schema in weightfile/bench/report.py) and its notes."""
    c = tower_config(vqf.header.arch)
    prepared = bench_image(vqf.header.arch, side)
    image = VisionInput(prepared.pixel_values, prepared.grid_thw)
    patches = prepared.pixel_values.shape[0]
    work = work_of(c, patches)
    notes = [RKNN_NOTE]
    reps = min(repetitions, MAX_REPETITIONS)
    rows: list[dict[str, Any]] = []
    linears: list[dict[str, Any]] = []
    ran = backend
    if backend is FAST:
        _fast_encode(vqf, c, image, threads, reps, rows, linears, notes)
        if not rows:
            ran = REFERENCE
            notes.append(
                "image encode: engine fast asked, but this family has no fast vision tower yet "
                "(weightfile/families/registry.py); the image was encoded by ref (the fast vision "
                "linears rows time the C Q8_0 product alone)"
            )
    if ran is REFERENCE:
        _ref_encode(vqf, c, image, reps, rows, linears, notes)
    for r in rows:  # the encode's own rate, the measure the Qwen3.5 rows are given too
        r["gflop_per_s"] = 2 * work.total / r["seconds"] / 1e9
    section = {
        "image": {
            "side": side,
            "preprocess": "hf",
            "grid": list(prepared.grid_thw),
            "patches": patches,
            "tokens": prepared.n_tokens,
        },
        "engine_asked": backend.name,
        "engine": ran.name,
        "flops_per_image": {
            "linears": 2 * work.linears,
            "attention": 2 * work.attention,
            "total": 2 * work.total,
        },
        "rows": rows,
        "vision_linears": linears or None,
    }
    return section, notes
