"""`.ninfer` projection matrices read in their payload encoding (spec/ninfer3.md §binding,
§row-split, §contiguous, §row-scale; spec/numerics.md §dot).

A parameter binds one object whole or ordered element ranges of several (spec/ninfer3.md §binding).
Each range that covers whole rows of a rank-2 object with the parameter's columns becomes a
`Segment`: those rows of that object, read in place by fast/csrc/ninfer.c (`wf_nf_matmat`: one
row decoded into a row buffer by the reference codec's one-rounding rule, then the canonical dot
with every token). Formats with an in-kernel decoder: q4/q5/q6/q8/t2 `row_split_k128_v1`,
bf16/fp32 `contiguous_le_v1` and fp8 `row_scale_v1`. Anything else (nvfp4
`block_scale_k16_m128x4_v1`, or a range that splits a row) is decoded to float32 by the fast
codec -- the reference's values, bit for bit -- and multiplied by the same kernel as fp32 rows.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from weightfile.fast._native import WfNfMatrix, WfQ35Products, address
from weightfile.fast.codecs.ninfer3.row_scale_v1 import E4M3FN_TABLE
from weightfile.fast.numerics import matrix as numerics_matrix
from weightfile.fast.numerics.hadamard import HadamardInput
from weightfile.fast.numerics.matrix import kernels
from weightfile.spec.codecs.ninfer3.layouts import (
    CONTIGUOUS_LE_V1,
    ROW_SCALE_V1,
    ROW_SPLIT_GEOMETRY,
    ROW_SPLIT_K128_V1,
    row_scale_planes,
    row_split_planes,
)

#: wf_nf_matrix kinds of fast/csrc/ninfer.c.
NF_KINDS = {"row_split": 0, "bf16": 1, "fp32": 2, "fp8_row": 3}
#: (format, layout) pairs the C kernel decodes itself.
FP8_FORMAT = "fp8_e4m3fn_row_bf16"
_LUT = np.ascontiguousarray(E4M3FN_TABLE, dtype=np.float32)


def in_kernel(fmt: str, layout: str) -> bool:
    """True when wf_nf_matmat reads this (format, layout) in place."""
    if layout == ROW_SPLIT_K128_V1:
        return fmt in ROW_SPLIT_GEOMETRY
    if layout == CONTIGUOUS_LE_V1:
        return fmt in ("bf16", "fp32")
    return layout == ROW_SCALE_V1 and fmt == FP8_FORMAT


@dataclass
class Segment:
    """Rows [row0, row0 + rows) of one object [N, cols] (payload bytes `data`, kept alive here)."""

    data: np.ndarray  # uint8 view of the object's payload, or float32 decoded values
    fmt: str
    layout: str
    shape: tuple[int, int]
    row0: int
    rows: int
    _struct: WfNfMatrix = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n, k = self.shape
        s = WfNfMatrix(address(self.data), address(_LUT), self.row0, self.rows, k)
        if self.layout == ROW_SPLIT_K128_V1:
            geo, p = ROW_SPLIT_GEOMETRY[self.fmt], row_split_planes(self.fmt, (n, k))
            s.kind, s.code_bits, s.group = NF_KINDS["row_split"], geo.code_bits, geo.group_size
            s.base_bytes, s.high_bytes = geo.base_bytes_per_group, geo.high_bytes_per_group
            s.base_bits = geo.base_bytes_per_group * 8 // geo.group_size
            s.gpr, s.high_offset, s.scale_offset = p.gpr, p.high_offset, p.scale_offset
        elif self.layout == ROW_SCALE_V1:
            s.kind = NF_KINDS["fp8_row"]
            s.scale_offset = row_scale_planes((n, k)).scale_plane_offset
        else:
            s.kind = NF_KINDS["bf16" if self.fmt == "bf16" else "fp32"]
        self._struct = s

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)


@dataclass
class NfMatrix:
    """A [rows, cols] projection as row segments of payload objects, in order."""

    rows: int
    cols: int
    segments: list[Segment]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def matmat(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        """Y = X W^T, float32 [T, rows]: every row the spec/numerics.md §dot of the decoded weight
        row with the token's activation, as the reference's matvec gives it."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.cols:
            raise ValueError(f"product of a {self.shape} matrix with activations {x.shape}")
        y = np.empty((x.shape[0], self.rows), dtype=np.float32)
        lib, at = kernels(), 0
        for seg in self.segments:
            th = cached_threads(threads, seg.rows * self.cols * x.shape[0])
            out = address(y) + 4 * at  # the segment's first column of y
            lib.wf_nf_matmat(
                ctypes.addressof(seg._struct), address(x), x.shape[0], out, self.rows, th
            )
            at += seg.rows
        return y


def matmat_set(mats: Sequence, x: np.ndarray, threads: int = 1) -> list[np.ndarray]:
    """[m.matmat(x, threads) for m in mats], the same bits (rows are independent, spec/numerics.md
    §threads): when every matrix is an NfMatrix, all their segments in one C call
    (`wf_nf_matmat_set`), so one hand-off to the pool instead of one a segment."""
    if not all(isinstance(m, NfMatrix) for m in mats):
        return [m.matmat(x, threads) for m in mats]
    x = np.ascontiguousarray(x, dtype=np.float32)
    cols, t = mats[0].cols, x.shape[0]
    if x.ndim != 2 or any(m.cols != x.shape[1] for m in mats):
        raise ValueError(f"product of matrices of widths {[m.cols for m in mats]} with {x.shape}")
    ys = [np.empty((t, m.rows), dtype=np.float32) for m in mats]
    structs, outs, strides = [], [], []
    for m, y in zip(mats, ys, strict=True):
        at = 0
        for seg in m.segments:
            structs.append(ctypes.addressof(seg._struct))
            outs.append(address(y) + 4 * at)  # the segment's first column of y
            strides.append(m.rows)
            at += seg.rows
    ptrs = np.array([structs, outs, strides], dtype=np.int64)
    th = cached_threads(threads, sum(m.rows for m in mats) * cols * t)
    kernels().wf_nf_matmat_set(
        address(ptrs[0]), len(structs), address(x), t, address(ptrs[1]), address(ptrs[2]), th
    )
    return ys


def cached_threads(asked: int, work: int) -> int:
    """`threads_for(asked, work)` without a ctypes call each time (a decode step asks about a
    hundred times); keyed by the current MIN_ELEMENTS_PER_THREAD too, which tests lower."""
    return _threads(asked, work, numerics_matrix.MIN_ELEMENTS_PER_THREAD)


@functools.lru_cache(maxsize=4096)
def _threads(asked: int, work: int, min_work: int) -> int:
    return int(kernels().wf_threads_for(int(asked), int(work), min_work))


class ProductSet:
    """`matmat_set` of fixed matrices, bound once (a layer's q/k/v/z/a/b, or gate/up): their
    segment structs and output offsets kept as arrays, every product written into one buffer, so
    that a call costs one allocation and one C call, not a list of pointers built each time.
    The buffer is [T, Σ rows], matrix i in columns bounds[i] .. bounds[i + 1] (the rows layout
    the layer kernels of fast/csrc/qwen35_layer.c read), or with `blocks` each matrix's [T, rows]
    end to end (each part contiguous)."""

    def __init__(self, mats: Sequence, blocks: bool = False) -> None:
        self.mats, self.blocks = tuple(mats), blocks
        self.bounds = [0, *np.cumsum([m.shape[0] for m in self.mats]).tolist()]
        self.width, self.cols = self.bounds[-1], self.mats[0].shape[1]
        if any(m.shape[1] != self.cols for m in self.mats):
            raise ValueError(f"one product set of widths {[m.shape[1] for m in self.mats]}")
        self.fused = all(isinstance(m, NfMatrix) for m in self.mats)
        if self.fused:
            structs, first, cols, ldy = [], [], [], []
            for m, at in zip(self.mats, self.bounds, strict=False):
                col = 0 if blocks else at
                for seg in m.segments:
                    structs.append(ctypes.addressof(seg._struct))
                    first.append(4 * at if blocks else 0)  # × T: the matrix's block
                    cols.append(4 * col)  # byte offset of the segment's first column
                    ldy.append(m.rows if blocks else self.width)
                    col += seg.rows
            self.structs = np.array(structs, dtype=np.int64)
            self.first, self.offsets = np.array(first, np.int64), np.array(cols, np.int64)
            self.ldy = np.array(ldy, dtype=np.int64)
            arrays = (self.structs, self.first, self.offsets, self.ldy)
            self.struct = WfQ35Products(
                *map(address, arrays), len(structs), self.width, self.cols
            )  # for fast/csrc/qwen35_forward.c

    def __call__(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        """The products, flat [T · width] with `blocks`, else [T, width]: the same bits as each
        matrix's matmat (rows are independent, spec/numerics.md §threads)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.cols:
            raise ValueError(f"product of matrices of width {self.cols} with {x.shape}")
        t = x.shape[0]
        y = np.empty(t * self.width if self.blocks else (t, self.width), dtype=np.float32)
        if not self.fused:
            for m, part in zip(self.mats, self.split(y), strict=True):
                part[...] = m.matmat(x, threads)
            return y
        outs = self.offsets + address(y)  # each segment's first output
        if self.blocks:
            outs += self.first * t
        th = cached_threads(threads, self.width * self.cols * t)
        kernels().wf_nf_matmat_set(
            address(self.structs), len(self.structs), address(x), t, address(outs),
            address(self.ldy), th,
        )  # fmt: skip
        return y

    def split(self, y: np.ndarray) -> list[np.ndarray]:
        """Each matrix's products [T, rows] in `y` (views)."""
        pairs = itertools.pairwise(self.bounds)
        if not self.blocks:
            return [y[:, a:b] for a, b in pairs]
        t = y.size // self.width if self.width else 0
        return [y[t * a : t * b].reshape(t, b - a) for a, b in pairs]


def float_segment(values: np.ndarray) -> Segment:
    """A float32 [rows, cols] array as one fp32 segment (the decoded fallback)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    raw = values.reshape(-1).view(np.uint8)
    return Segment(raw, "fp32", CONTIGUOUS_LE_V1, values.shape, 0, values.shape[0])


#: An NfMatrix read at a Use with hadamard_signs: y = W · H(s ∘ x) (spec/numerics.md §hadamard),
#: the fast butterflies then the stored, rotated matrix's product.
NfHadamard = HadamardInput
