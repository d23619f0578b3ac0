"""The C kernels on buffers fenced by PROT_NONE pages (tests/fast/test_kernel_bounds.py runs it).

Every array a kernel reads or writes -- weight payloads, activations, codes, scales, outputs --
lives in its own anonymous mapping between two inaccessible pages, flush against the upper one
(`end`: one byte past the array faults) or against the lower one (`start`: one byte before it
faults). A kernel that reads or writes out of bounds -- a leftover-rows bound off by one in a SIMD
row loop, a vector tail that runs past n -- takes SIGSEGV at that access instead of corrupting the
heap silently (issue 36 item 9). Each case is printed (flushed) before its call, so when this
process dies the last line names the case that killed it.

    python tests/fast/guarded_kernels.py products|dense|elementwise

Shapes cover every leftover of the kernels' row bands (16 and 8 rows for AVX-512, 8 and 4 for
AVX2 and NEON, fast/csrc/qmatvec*.c, gemm_x86.c), token tiles (4 in gemm_x86.c), odd block counts
(the AVX2 Q4 loop takes blocks in pairs), row splits between threads and between the matrices of
one set call, and lengths 1..67 for the element-wise vector tails; on every kernel path usable
here (spec/numerics.md §kernel-paths).
"""

from __future__ import annotations

import ctypes
import faulthandler
import functools
import json
import math
import mmap
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the `strategies` package

from strategies.weights import QUANT_LAYOUTS, quant_payload, quant_words

from weightfile.fast._native import WfMatrix, address, forced_isa, library, usable_isas
from weightfile.spec.codecs.vqf.registry import CODECS, payload_size

PAGE = mmap.PAGESIZE
PROT_NONE, PROT_RW = 0, 3
MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20  # Linux
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)  # fmt: skip
_libc.mmap.restype = ctypes.c_void_p
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
#: the live mappings (address, length): unmapped by `release` once a case's calls are done, so
#: the process stays far below the kernel's limit on mappings
_LIVE: list[tuple[int, int]] = []


def fenced(values: np.ndarray, side: str) -> np.ndarray:
    """A C-contiguous copy of `values` in a fresh mapping, flush against a PROT_NONE page on
    `side` ("end" or "start"), with a PROT_NONE page on the other side too. Valid until the
    next `release()`."""
    values = np.ascontiguousarray(values)
    pages = -(-max(values.nbytes, 1) // PAGE)
    length = (pages + 2) * PAGE
    base = _libc.mmap(None, length, PROT_RW, MAP_PRIVATE_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap failed")
    _LIVE.append((base, length))
    for at in (base, base + (pages + 1) * PAGE):
        if _libc.mprotect(at, PAGE, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
    start = base + PAGE + (pages * PAGE - values.nbytes if side == "end" else 0)
    raw = (ctypes.c_char * values.nbytes).from_address(start)
    out = np.frombuffer(raw, values.dtype).reshape(values.shape)
    out[...] = values
    return out


def release() -> None:
    """Unmap every fenced buffer (none may be used after this)."""
    while _LIVE:
        _libc.munmap(*_LIVE.pop())


def announce(**case: object) -> None:
    print(json.dumps(case), flush=True)


def matrix(layout: str, payload: np.ndarray, rows: int, cols: int) -> WfMatrix:
    """`wf_matrix` over a fenced payload (the fields FastMatrix fills, fast/numerics/matrix.py)."""
    from weightfile.fast.numerics.matrix import KINDS

    c = CODECS[layout]
    t = c.tiling
    assert payload.size == payload_size(layout, rows, cols)
    return WfMatrix(
        payload.ctypes.data, rows, cols, KINDS[c.base],
        t.group_rows if t else 1, t.chunk_bytes if t else 0, t.xor if t else 0,
    )  # fmt: skip


def shapes(layout: str) -> Iterator[tuple[int, int]]:
    """Every row count up to past two 16-row bands (whole row groups when tiled), with block
    counts 1 and 3 (the least the layout's columns allow)."""
    c = CODECS[layout]
    step = math.lcm(32, c.cols_multiple)
    for k in (1, 3):
        cols = step * k
        if cols > 512:
            continue
        for rows in range(c.row_group, 36 + c.row_group, c.row_group):
            yield rows, cols


@functools.cache
def payload(layout: str, rows: int, cols: int) -> np.ndarray:
    """Random words of `layout` (tests/strategies/weights.py), made once per shape."""
    rng = np.random.default_rng([rows, cols, len(layout)])
    return np.frombuffer(quant_payload(layout, quant_words(rng, layout, rows, cols)), np.uint8)


def products(rng: np.random.Generator, isa: str, side: str) -> None:
    """wf_matmat_q8_activation_set (one and three matrices of one layout) and wf_matmat_f32 (the
    spec/numerics.md §f32-weights mode) on every quantized layout."""
    lib = library()
    for layout in sorted(QUANT_LAYOUTS):
        for rows, cols in shapes(layout):
            tokens = int(rng.choice([1, 2, 3, 5, 6]))
            group = [rows] if rng.random() < 0.5 else [rows, CODECS[layout].row_group, rows]
            mats, keep = [], []
            for r in group:
                keep.append(fenced(payload(layout, r, cols), side))
                mats.append(matrix(layout, keep[-1], r, cols))
            x = rng.standard_normal((tokens, cols)).astype(np.float32)
            codes = fenced(np.clip(np.rint(x * 40), -127, 127).astype(np.int8), side)
            scales = fenced(np.full((tokens, cols // 32), 0.025, np.float32), side)
            ys = [fenced(np.zeros((tokens, r), np.float32), side) for r in group]
            mat_ptrs = (ctypes.c_void_p * len(mats))(*(ctypes.addressof(m) for m in mats))
            y_ptrs = (ctypes.c_void_p * len(ys))(*(address(y) for y in ys))
            for threads in (1, 2, 3):
                announce(kernel="wf_matmat_q8_activation_set", isa=isa, side=side, layout=layout,
                         rows=group, cols=cols, tokens=tokens, threads=threads)  # fmt: skip
                lib.wf_matmat_q8_activation_set(
                    ctypes.addressof(mat_ptrs), len(mats), address(codes), address(scales),
                    tokens, ctypes.addressof(y_ptrs), threads,
                )  # fmt: skip
            xf = fenced(x, side)
            y = fenced(np.zeros((tokens, rows), np.float32), side)
            for threads in (1, 3):
                announce(kernel="wf_matmat_f32", isa=isa, side=side, layout=layout, rows=rows,
                         cols=cols, tokens=tokens, threads=threads)  # fmt: skip
                lib.wf_matmat_f32(ctypes.addressof(mats[0]), address(xf), tokens, address(y),
                                  threads)  # fmt: skip
            release()


def dense(rng: np.random.Generator, isa: str, side: str) -> None:
    """wf_matmat_f32 on F32 and F16 weights (spec/numerics.md §dot), any rows, cols 1..40."""
    lib = library()
    for layout, dtype in (("f32", np.float32), ("f16", np.float16)):
        for rows in range(1, 36):
            cols = int(rng.integers(1, 41))
            tokens = int(rng.choice([1, 2, 3, 5]))
            w = fenced(rng.standard_normal((rows, cols)).astype(dtype).view(np.uint8).ravel(), side)
            m = matrix(layout, w, rows, cols)
            x = fenced(rng.standard_normal((tokens, cols)).astype(np.float32), side)
            y = fenced(np.zeros((tokens, rows), np.float32), side)
            for threads in (1, 3):
                announce(kernel="wf_matmat_f32", isa=isa, side=side, layout=layout, rows=rows,
                         cols=cols, tokens=tokens, threads=threads)  # fmt: skip
                lib.wf_matmat_f32(ctypes.addressof(m), address(x), tokens, address(y), threads)
            release()


def elementwise(rng: np.random.Generator, isa: str, side: str) -> None:
    """The vector kernels with scalar tails, every length 1..67 (multiples of 32 where they
    quantize activations)."""
    lib = library()

    def f(*shape: int) -> np.ndarray:
        return fenced(rng.standard_normal(shape).astype(np.float32), side)

    for n in range(1, 68):
        x, g, u, out = f(n), f(n), f(n), f(n)
        announce(kernel="wf_exp_array", isa=isa, side=side, n=n)
        lib.wf_exp_array(address(x), n, address(out))
        announce(kernel="wf_swiglu", isa=isa, side=side, n=n)
        lib.wf_swiglu(address(g), address(u), n, address(out))
        nrows = int(rng.integers(1, 4))
        xs, w, outs = f(nrows, n), f(n), f(nrows, n)
        announce(kernel="wf_rmsnorm_rows", isa=isa, side=side, rows=nrows, n=n)
        lib.wf_rmsnorm_rows(address(xs), nrows, n, address(w), 1e-6, address(outs))
        release()
    for n in (32, 64, 96, 128, 160, 256, 288):
        codes = fenced(np.zeros(n, np.int8), side)
        scales = fenced(np.zeros(n // 32, np.float32), side)
        x, g, u, out = f(n), f(n), f(n), f(n)
        announce(kernel="wf_quantize_activation", isa=isa, side=side, n=n)
        lib.wf_quantize_activation(address(x), n, address(codes), address(scales))
        announce(kernel="wf_swiglu_quantize", isa=isa, side=side, n=n)
        lib.wf_swiglu_quantize(address(g), address(u), n, address(out), address(codes),
                               address(scales))  # fmt: skip
        announce(kernel="wf_rmsnorm_quantize", isa=isa, side=side, rows=1, n=n)
        lib.wf_rmsnorm_quantize(address(x), 1, n, address(g), 1e-6, address(out),
                                address(codes), address(scales))  # fmt: skip
        release()


GROUPS = {"products": products, "dense": dense, "elementwise": elementwise}


def main(group: str) -> int:
    faulthandler.enable()  # a fault prints this process's Python stack to stderr too
    if library() is None:
        print("no C kernels", flush=True)
        return 0
    rng = np.random.default_rng(36)
    for isa in usable_isas():
        with forced_isa(isa):
            for side in ("end", "start"):
                GROUPS[group](rng, isa, side)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
