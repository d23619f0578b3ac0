"""The two forward engines the bench compares, and the honest stand-ins when one is missing.

Both come from the file's row of the family registry (`weightfile.families.vqf_family`).

fast: the family's fast model (`Family.fast_model(vqf, threads=n)`) and, for the matrix-vector
rows, `weightfile.fast.numerics.matrix.matrix_from_entry(vqf, name, rows, cols)`. On a machine
without the C kernels (no compiler) the bench reports their rows as unavailable and never
substitutes the reference under the fast label.

ref: the family's reference model (`Family.reference_model(vqf)`), the oracle. On real-size
models one reference token takes minutes, so above `REF_MEASURE_LIMIT` multiply-adds per token
the reference per-token time is *estimated*: its matrix-vector kernel is timed on the first rows
of every matrix at the real column count and scaled to all rows (norms, RoPE and attention at
short context are < 1% of the work and not counted). Reports label such numbers "estimated".
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from weightfile.families import ROWS, VQF, Family, text_family_of, vqf_family
from weightfile.fast._native import library
from weightfile.fast.numerics.matrix import matrix_from_entry
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.bind_vqf import PROJECTION_SETS, choose_projection_set, codec_matrix_words
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import CANONICAL
from weightfile.spec.vqf.inventory import Geometry, inventory
from weightfile.spec.vqf.qtypes import tensor_bytes

#: Above this many multiply-adds per token the reference forward is estimated, not run.
REF_MEASURE_LIMIT = 2_000_000
#: Rows of each matrix the estimate times: whole row groups of every tiled layout
#: (spec/vqf.md §repack-gates), and enough that the per-call overhead is amortised (at 8 rows a
#: 1024×1024 estimate ran 1.4× the measured full product; at 32 rows within a few percent, on the
#: bench's development machine).
ESTIMATE_ROWS = 32


def preload() -> None:
    """Import the code of every VQF family, so that a memory baseline taken afterwards counts
    the model's pages and not its modules."""
    for row in ROWS:
        if row.container == VQF:
            row.preload()


def open_model(vqf: VQFFile, threads: int = 1) -> Any | None:
    """The fast model of the file's family, or None when the family has no fast forward pass."""
    family = text_family(vqf)
    family.require_supported()
    return family.fast_model(vqf, threads=threads) if family.has_fast else None


def text_family(vqf: VQFFile) -> Family:
    """The row whose models run the text tests (pp/tg, no image) of the file: its row's
    `text_family` (weightfile/families/registry.py), else its own row. For a Qwen3-VL file that is
    the dense Qwen3 row: its text tower is the dense decoder block for block, and a prompt
    without images sees MRoPE as RoPE (ref/qwen3_vl/model.py, spec/models.md §qwen3-vl). The image
    encode (weightfile/bench/vision.py) takes the file's own row. (A random text id may also be
    the image token, which the VL models refuse without an image.)"""
    return text_family_of(vqf_family(vqf))


def fast_open_model() -> Callable[..., Any] | None:
    """`open_model` (vqf, threads=n) -> fast model, or None without the C kernels (no compiler):
    the fast forward pass has no NumPy fallback, and the reference never stands in for it."""
    return open_model if library() is not None else None


def fast_matrix_from_entry() -> Callable[..., Any] | None:
    """`weightfile.fast.numerics.matrix.matrix_from_entry`, or None without the C kernels."""
    return matrix_from_entry if library() is not None else None


def open_fast(vqf: VQFFile, threads: int) -> Any | None:
    """The fast engine's model, or None without the C kernels."""
    open_model = fast_open_model()
    return None if open_model is None else open_model(vqf, threads=threads)


def forward_prompt(model: Any, prompt: list[int], cache: Any) -> Any:
    """`model.forward(prompt, cache)` where only the last row is read: a model whose forward
    takes `logits="last"` (the fast Qwen3 decoders) computes lm_head for that row alone, as
    llama-bench's prompt test does; others compute every row."""
    if "logits" in inspect.signature(model.forward).parameters:
        return model.forward(prompt, cache, logits="last")
    return model.forward(prompt, cache)


def open_ref(vqf: VQFFile) -> Any:
    """The reference model of the text tests' family (`text_family`; weights decoded)."""
    return text_family(vqf).reference_model(vqf)


def projection_set_of(vqf: VQFFile) -> str:
    """The projection set the decoder binds: q4 when present, else q8 (bind_vqf)."""
    return choose_projection_set(vqf, None)


def matrix_shapes(vqf: VQFFile) -> dict[str, tuple[int, int, int]]:
    """Entry name -> (physical rows, cols, how many per token) of every quantized matrix
    (spec/vqf.md §text-tensors)."""
    arch = vqf.header.arch
    g = Geometry.from_arch(arch)
    shapes = {}
    for kind in inventory(arch, projection_set_of(vqf)):
        if kind.family in PROJECTION_SETS:
            count, out, inp = kind.physical(g)
            shapes[kind.name] = (out, inp, count)
    return shapes


def macs_per_token(shapes: dict[str, tuple[int, int, int]]) -> int:
    """Multiply-adds of the matrix-vector products of one decoded token."""
    return sum(rows * cols * count for rows, cols, count in shapes.values())


def leading_rows(vqf: VQFFile, name: str, rows: int, cols: int) -> QuantMatrix:
    """The first ESTIMATE_ROWS rows of layer 0, decoded by the reference codec.

    Row groups are stored one after another in every layout (spec/vqf.md §q8-tiled, §q4-0), so the
    first k rows (k a multiple of the group) are the first B(k·cols) bytes and decode as a k-row
    matrix.
    """
    e = vqf.entry(name)
    k = min(ESTIMATE_ROWS, rows)
    head = bytes(vqf.payload(e)[: tensor_bytes(e.qtype, k * cols)])
    codes, scales = codec_matrix_words(name, e.qtype, vqf.header.flags, head, k, cols)
    return QuantMatrix(np.asarray(codes, np.int8), np.asarray(scales, np.uint16))


def estimate_ref_token_seconds(vqf: VQFFile) -> float:
    """Σ over matrices of (time of the ref matvec on k rows) · rows / k · count per token."""
    kernels = kernels_for(CANONICAL)
    total = 0.0
    for name, (rows, cols, count) in matrix_shapes(vqf).items():
        m = leading_rows(vqf, name, rows, cols)
        x = [np.float32(v) for v in np.linspace(-1, 1, cols, dtype=np.float32)]
        best = float("inf")
        for _ in range(3):  # best of three: the first call also pays for warming caches
            start = time.perf_counter()
            kernels.matvec(m, x)
            best = min(best, time.perf_counter() - start)
        total += best * rows / m.shape[0] * count
    return total
