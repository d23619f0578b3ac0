"""The board tower's operations through fast/csrc/board_vision.c (spec/numerics.md §board-vision).

Each function has the arguments and results of its twin in `ref.qwen3_vl.board` and computes
the same bits: the same float32 operations in the same order, fmaf() where the reference's
`fma_f32` rounds once, binary64 where the engine accumulates in double, the host libm's expf
(after the reference's libm check) and the emulated aarch64 tanhf. Work splits over patches,
queries or tokens only, so `threads` never changes a result.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

from weightfile.fast._native import library
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board import libm
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.constants import QBLOCK

F32 = np.float32


@cache
def lib() -> ctypes.CDLL:
    """The kernel library with board_vision.c's prototypes declared; UnsupportedError without
    it."""
    libm._libm()  # spec/numerics.md §board-c-library: the same host-libm check as the reference
    c = library()
    if c is None:
        raise UnsupportedError(
            "frontend.profile.unsupported",
            "the fast kestrel-board engine needs the C kernels (no compiler here)",
            path="--engine",
        )
    p, i64, i32, f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_float
    protos = {
        "wfv_tanhf": ((p, i64, p), None),
        "wfv_gelu": ((p, i64, p, i32), None),
        "wfv_layernorm": ((p, i64, i64, p, p, f32, p), None),
        "wfv_patch_embed": ((p, i64, i64, p, p, i64, p, i32), None),
        "wfv_q8_linear": ((p, p, i64, i64, p, p, i64, p, p, i32), None),
        "wfv_attention": ((p, p, p, i64, i64, f32, p, p, i32), i32),
        "wfv_dense_linear": ((p, i64, i64, p, i64, p, p, i32), None),
        "wfb_quantize_act": ((p, i64, p, p), None),
    }
    for name, (args, res) in protos.items():
        fn = getattr(c, name)
        fn.argtypes, fn.restype = args, res
    return c


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=F32)


def _p(a: np.ndarray) -> int:
    return a.ctypes.data


def tanhf(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-vision-tanhf element-wise."""
    x = _f32(x)
    y = np.empty_like(x)
    lib().wfv_tanhf(_p(x), x.size, _p(y))
    return y


def gelu(x: np.ndarray, threads: int = 1) -> np.ndarray:
    """spec/numerics.md §board-vision-gelu element-wise."""
    x = _f32(x)
    y = np.empty_like(x)
    lib().wfv_gelu(_p(x), x.size, _p(y), threads)
    return y


def layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-vision-layernorm over the last axis."""
    x = _f32(x)
    out = np.empty_like(x)
    n = x.shape[-1]
    lib().wfv_layernorm(_p(x), x.size // n, n, _p(_f32(w)), _p(_f32(b)), F32(eps), _p(out))
    return out


def patch_embed(rows: np.ndarray, weight: np.ndarray, bias: np.ndarray, threads: int = 1):
    """spec/numerics.md §board-vision-patch [P, vh]."""
    rows, weight = _f32(rows), _f32(weight)
    y = np.empty((rows.shape[0], weight.shape[0]), F32)
    lib().wfv_patch_embed(_p(rows), rows.shape[0], rows.shape[1], _p(weight), _p(_f32(bias)),
                          weight.shape[0], _p(y), threads)  # fmt: skip
    return y


def quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-vision-linear int8 codes [P, k] and f16-rounded scales
    [P, k/32] of every row (board.c's activation quantizer, then the scales to binary16)."""
    x = _f32(x)
    if x.shape[1] % QBLOCK:
        raise ValueError(f"activation width {x.shape[1]} is not a multiple of {QBLOCK}")
    codes = np.empty(x.shape, np.int8)
    scales = np.empty((x.shape[0], x.shape[1] // QBLOCK), F32)
    lib().wfb_quantize_act(_p(x), x.size, _p(codes), _p(scales))
    return codes, scales.astype(np.float16).astype(F32)


def q8_linear(m: QuantMatrix, bias: np.ndarray, x: np.ndarray, threads: int = 1) -> np.ndarray:
    """spec/numerics.md §board-vision-linear y = W x + b for every row of x [P, k]."""
    rows, cols = m.shape
    if cols != x.shape[1]:
        raise ValueError(f"a [{rows}, {cols}] matrix applied to rows of {x.shape[1]}")
    codes, d16 = quantize_rows(x)
    wc = np.ascontiguousarray(m.codes)
    dw = _f32(m.scale_bits.view(np.float16).astype(F32))
    y = np.empty((x.shape[0], rows), F32)
    lib().wfv_q8_linear(_p(codes), _p(d16), x.shape[0], cols, _p(wc), _p(dw), rows,
                        _p(_f32(bias)), _p(y), threads)  # fmt: skip
    return y


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: np.float32, threads: int = 1):
    """spec/numerics.md §board-vision-attention one head: (output [P, hd], scores [P, P])."""
    q, k, v = _f32(q), _f32(k), _f32(v)
    n, hd = q.shape
    out = np.empty_like(q)
    scores = np.empty((n, n), F32)
    rc = lib().wfv_attention(_p(q), _p(k), _p(v), n, hd, F32(scale), _p(out), _p(scores), threads)
    if rc:
        raise UnsupportedError(
            "vqf.bind.unsupported",
            f"the board's vision attention takes head_dim a multiple of 4 up to 256 (got {hd})",
            path="arch.vis_heads",
        )
    return out, scores


def dense_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray, threads: int = 1) -> np.ndarray:
    """spec/numerics.md §board-vision-mergers an F32 linear, binary64 accumulator. [T, rows]"""
    x, w = _f32(x), _f32(w)
    y = np.empty((x.shape[0], w.shape[0]), F32)
    lib().wfv_dense_linear(_p(x), x.shape[0], x.shape[1], _p(w), w.shape[0], _p(_f32(b)),
                           _p(y), threads)  # fmt: skip
    return y
