"""The board's operations through the C kernels of fast/csrc/board.c (spec/numerics.md §board).

Each function has the name, arguments and results of its reference twin in `ref.qwen3.board`
and computes the same bits: the C does the same float32 operations in the same order, fmaf()
where the reference's `fma_f32` rounds once, and the host libm's expf/cosf/sinf (the reference's
libm check runs first, so both engines refuse the same hosts). Products and attention split
over output rows or heads only, so `threads` never changes a result.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np

from weightfile.fast._native import library
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board import libm
from weightfile.ref.qwen3.board.quant import f16_round
from weightfile.ref.qwen3.board.rope import inv_freq
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.constants import QBLOCK

F32 = np.float32
HEAD_EPS = F32(1e-6)
FORM_Q4_DECODE, FORM_SINGLE_CHAIN, FORM_Q8_PREFILL = 0, 1, 2
TREE8, SEQUENTIAL = 0, 1


@cache
def lib() -> ctypes.CDLL:
    """The kernel library with board.c's prototypes declared; UnsupportedError without it."""
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
        "wfb_quantize_act": ((p, i64, p, p), None),  # x, n, codes i8, scales f32
        "wfb_matvec": ((p, p, i64, i64, p, p, i32, p, i32), None),
        "wfb_rmsnorm": ((p, p, i64, i64, f32, i32, p), None),  # x, w, n, count, eps, order, out
        "wfb_exp_neon4": ((p, i64, p), None),
        "wfb_reciprocal": ((p, i64, p), i32),
        "wfb_silu_mul": ((p, p, i64, p), i32),
        "wfb_rope": ((p, i64, i64, i64, p, p), None),  # x, heads, head_dim, pos, inv_freq, out
        "wfb_quantize_kv": ((p, i64, i64, p, p), None),  # v, n, count, codes, scales
        "wfb_quantize_query": ((p, i64, p, p), None),
        "wfb_attn_decode": ((p, p, p, p, p, i64, i64, i64, i64, f32, p, i32), None),
        "wfb_attn_prefill": ((p, p, p, i64, i64, i64, i64, f32, p, p, i32), None),
    }
    for name, (args, res) in protos.items():
        fn = getattr(c, name)
        fn.argtypes, fn.restype = args, res
    return c


#: Multiply-adds per extra thread: smaller products run on fewer threads than asked.
DEFAULT_GRAIN = 65536


@contextmanager
def thread_grain(grain: int) -> Iterator[None]:
    """Within the block, allow a thread per `grain` multiply-adds (1: always the asked count;
    the tests' way to run tiny products on several threads)."""
    lib().wfb_set_thread_grain(grain)
    try:
        yield
    finally:
        lib().wfb_set_thread_grain(DEFAULT_GRAIN)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=F32)


def _p(a: np.ndarray) -> int:
    return a.ctypes.data


# --- spec/numerics.md §board-quantizers quantizers ------------------------------------------------


def quantize_act(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-activations codes int8 [blocks, 32] and scales float32 [blocks] of
    x."""
    if x.shape[0] % QBLOCK:
        raise ValueError(f"activation length {x.shape[0]} is not a multiple of {QBLOCK}")
    x = _f32(x)
    codes = np.empty((x.shape[0] // QBLOCK, QBLOCK), np.int8)
    scales = np.empty(x.shape[0] // QBLOCK, F32)
    lib().wfb_quantize_act(_p(x), x.shape[0], _p(codes), _p(scales))
    return codes, scales


def quantize_query(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-query one head's query: codes [blocks, 32] and scales [blocks]."""
    q = _f32(q)
    codes = np.empty((q.shape[0] // QBLOCK, QBLOCK), np.int8)
    scales = np.empty(q.shape[0] // QBLOCK, F32)
    lib().wfb_quantize_query(_p(q), q.shape[0], _p(codes), _p(scales))
    return codes, scales


def quantize_kv(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §board-kv-cache vectors [count, n] (or one [n]): int8 codes, scales
    [count]."""
    v = _f32(np.atleast_2d(v))
    codes = np.empty(v.shape, np.int8)
    scales = np.empty(v.shape[0], F32)
    lib().wfb_quantize_kv(_p(v), v.shape[1], v.shape[0], _p(codes), _p(scales))
    return codes, scales


# --- spec/numerics.md §board-products products ----------------------------------------------------


def _matvec(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray, form: int, threads: int):
    rows, cols = m.shape
    w = np.ascontiguousarray(m.codes)
    sb = np.ascontiguousarray(m.scale_bits)
    xc = np.ascontiguousarray(codes, dtype=np.int8)
    dx = _f32(d_x)
    y = np.empty(rows, F32)
    lib().wfb_matvec(_p(w), _p(sb), rows, cols, _p(xc), _p(dx), form, _p(y), threads)
    return y


def q4_decode(m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray, threads: int = 1) -> np.ndarray:
    """spec/numerics.md §board-q4-decode the lo/hi FMA chains, y = fl(lo + hi). [rows]"""
    return _matvec(m, codes, d_x, FORM_Q4_DECODE, threads)


def single_chain(
    m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray, threads: int = 1
) -> np.ndarray:
    """spec/numerics.md §board-one-chain one FMA chain per row over the 32-element block dots.
    [rows]"""
    return _matvec(m, codes, d_x, FORM_SINGLE_CHAIN, threads)


def q4_prefill_gemm(
    m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray, threads: int = 1
) -> np.ndarray:
    """spec/numerics.md §board-q4-prefill the single chain with f16-rounded activation scales.
    [rows]"""
    return _matvec(m, codes, f16_round(d_x), FORM_SINGLE_CHAIN, threads)


def q8_prefill_gemm(
    m: QuantMatrix, codes: np.ndarray, d_x: np.ndarray, threads: int = 1
) -> np.ndarray:
    """spec/numerics.md §board-q8-prefill the unfused chain with f16-rounded activation scales.
    [rows]"""
    return _matvec(m, codes, f16_round(d_x), FORM_Q8_PREFILL, threads)


# --- spec/numerics.md §board-rmsnorm RMSNorm ------------------------------------------------------


def _rmsnorm(x: np.ndarray, w: np.ndarray, n: int, eps: np.float32, order: int) -> np.ndarray:
    x, w = _f32(x), _f32(w)
    out = np.empty_like(x)
    lib().wfb_rmsnorm(_p(x), _p(w), n, x.size // n, float(eps), order, _p(out))
    return out


def rmsnorm_tree8(x: np.ndarray, w: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm `dyn_rms_norm`: decode norms and every final norm."""
    return _rmsnorm(x, w, x.shape[0], eps, TREE8)


def rmsnorm_sequential(x: np.ndarray, w: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm `dyn_rms_norm_batch`: the prefill layer norms."""
    return _rmsnorm(x, w, x.shape[0], eps, SEQUENTIAL)


def head_norms(x: np.ndarray, w: np.ndarray, head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-rmsnorm q_norm / k_norm: the sequential sum per head, eps 1e-6."""
    return _rmsnorm(x, w, head_dim, HEAD_EPS, SEQUENTIAL)


# --- spec/numerics.md §board-exp exp, reciprocal, SiLU --------------------------------------------


def exp_neon4(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-exp-neon4 the engine's polynomial exp, element-wise."""
    x = _f32(x)
    out = np.empty_like(x)
    lib().wfb_exp_neon4(_p(x), x.size, _p(out))
    return out


def _range_error(what: str) -> ValueError:
    return ValueError(f"{what}: frecpe emulation covers positive normal inputs below 2**126 only")


def reciprocal(d: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-reciprocal FRECPE refined by two Newton steps."""
    d = _f32(d)
    out = np.empty_like(d)
    if lib().wfb_reciprocal(_p(d), d.size, _p(out)):
        raise _range_error("reciprocal")
    return out


def silu_mul(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-silu dense SwiGLU in 4-lane groups."""
    g, u = _f32(gate), _f32(up)
    if len(g) % 4:
        raise ValueError(f"silu_mul of {len(g)} elements: not a whole number of 4-lane groups")
    out = np.empty_like(g)
    if lib().wfb_silu_mul(_p(g), _p(u), g.size, _p(out)):
        raise _range_error("silu_mul")
    return out


# --- spec/numerics.md §board-rope RoPE ------------------------------------------------------------


@cache
def _freqs(theta: float, head_dim: int) -> np.ndarray:
    return np.array(inv_freq(theta, head_dim), dtype=F32)


def rope_heads(x: np.ndarray, pos: int, theta: float, head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-rope every head rotated with cosf/sinf of fl(pos · f_j)."""
    x = _f32(x)
    out = np.empty_like(x)
    f = _freqs(theta, head_dim)
    lib().wfb_rope(_p(x), x.size // head_dim, head_dim, pos, _p(f), _p(out))
    return out


# --- spec/numerics.md §board-attention attention --------------------------------------------------


def attn_decode(
    q: np.ndarray,
    k8: np.ndarray,
    v8: np.ndarray,
    ks: np.ndarray,
    vs: np.ndarray,
    heads: int,
    scale: np.float32,
    threads: int = 1,
) -> np.ndarray:
    """spec/numerics.md §board-decode-attention every query head over the INT8 cache: codes [T,
    kv_heads, head_dim], scales [T, kv_heads]. [heads*head_dim]"""
    upto, kvh, hd = k8.shape
    if hd % QBLOCK or hd > 256:
        raise ValueError(f"decode attention needs head_dim a multiple of 32 up to 256, not {hd}")
    q = _f32(q)
    out = np.empty(heads * hd, F32)
    k8, v8 = np.ascontiguousarray(k8, np.int8), np.ascontiguousarray(v8, np.int8)
    ks, vs = _f32(ks), _f32(vs)
    lib().wfb_attn_decode(
        _p(q), _p(k8), _p(v8), _p(ks), _p(vs), upto, heads, kvh, hd, float(scale), _p(out), threads
    )
    return out


def attn_prefill(
    q: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    heads: int,
    scale: np.float32,
    threads: int = 1,
) -> np.ndarray:
    """spec/numerics.md §board-prefill-attention every query head over float32 keys/values [T,
    kv_heads, head_dim]. [heads*head_dim]"""
    upto, kvh, hd = keys.shape
    q, keys, values = _f32(q), _f32(keys), _f32(values)
    out = np.empty(heads * hd, F32)
    work = np.empty(heads * upto, F32)
    lib().wfb_attn_prefill(
        _p(q), _p(keys), _p(values), upto, heads, kvh, hd, float(scale), _p(out), _p(work), threads
    )
    return out
