"""Vectorised steps shared by the fast VQF codecs; argument checks are ref's own functions, so
fast raises exactly what ref raises (ref.codecs.vqf.common)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from weightfile.ref.codecs.vqf.common import length_error, require_shape
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import InvalidError, MalformedError, Violation

F32 = np.float32
#: Blocks processed per chunk: keeps the temporaries of a 4096 x 4096 matrix inside the caches.
CHUNK_BLOCKS = 4096


def input_array(name: str, values: object, rows: int, cols: int) -> np.ndarray:
    """The rows·cols inputs as a flat float32 array (ref: common.input_bits)."""
    require_shape(name, rows, cols)
    arr = np.asarray(values, dtype=np.float32)
    if arr.size != rows * cols:
        raise MalformedError(
            rule(name, "shape"), f"{arr.size} values for [{rows} x {cols}]", path="values"
        )
    return arr.reshape(-1)


def require_payload(name: str, payload: bytes, rows: int, cols: int) -> memoryview:
    """Shape and length checks of ref (same errors), without copying a large payload.

    Any C-contiguous buffer works (bytes, bytearray, mmap slices); a byte view is returned.
    """
    require_shape(name, rows, cols)
    view = memoryview(payload).cast("B")
    err = length_error(name, view, rows, cols)  # type: ignore[arg-type]
    if err is not None:
        raise err
    return view


def require_finite(name: str, x: np.ndarray, cols: int) -> None:
    """Refuse NaN/Inf quantiser input, naming the first one (ref: common.require_finite)."""
    finite = np.isfinite(x)
    if not finite.all():
        i = int(np.argmin(finite))  # the first False
        where = f"values[{i // cols}][{i % cols}]" if cols else f"values[{i}]"
        raise InvalidError(rule(name, "finite_input"), "quantiser input is NaN or Inf", path=where)


def padded_blocks(x: np.ndarray, size: int) -> np.ndarray:
    """[ceil(n/size), size] float32, a partial last run padded with +0.0 (ref: common.blocks_of)."""
    nb = -(-x.size // size)
    if nb * size == x.size:
        return x.reshape(nb, size)
    out = np.zeros(nb * size, dtype=np.float32)
    out[: x.size] = x
    return out.reshape(nb, size)


def chunks(n: int, step: int = CHUNK_BLOCKS) -> Iterator[slice]:
    """Consecutive row slices of at most `step` blocks."""
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def saturate(v: np.ndarray, lo: int, hi: int, dtype: type) -> np.ndarray:
    """trunc toward zero, clamped to [lo, hi], NaN -> 0 (ref: common.saturating_trunc)."""
    v = np.where(np.isnan(v), F32(0), v)
    return np.clip(v, lo, hi).astype(dtype)  # astype truncates toward zero


def scales_shape(rows: int, cols: int, nblocks: int) -> tuple[int, ...]:
    """[rows, cols/32] when rows never share a block, else the block sequence (as ref)."""
    return (rows, cols // 32) if cols % 32 == 0 else (nblocks,)


@dataclass(frozen=True, order=True)
class Found:
    """A violation with the key that puts it where ref's block-by-block scan reports it."""

    block: int
    rank: int  # order of the checks inside one block in ref
    j: int  # element index inside the block for per-code checks
    violation: Violation


def in_ref_order(found: list[Found]) -> list[Violation]:
    """The violations in ref's order: block, then check, then element."""
    return [f.violation for f in sorted(found, key=lambda f: (f.block, f.rank, f.j))]


def each(mask: np.ndarray) -> Iterator[tuple[int, ...]]:
    """Indices where a boolean array is set, as plain ints, in C order."""
    for idx in np.argwhere(mask):
        yield tuple(int(i) for i in idx)
