"""Two arrays compared element by element (spec/numerics.md §dump-diff).

Floats are compared by bit pattern (two NaNs are equal whatever their payload). The distance in
ulps is the distance on the ordered float line: a float's bits map to a monotone integer (its
magnitude bits, negated when the sign bit is set), so +0 and -0 are both 0 and the values
straddling zero are as many steps apart as there are floats between them (-min subnormal to
+min subnormal: 2). Elements whose signs differ are counted on their own, so one value crossing
zero does not hide the distance of the rest. With a tolerance, an element that is not identical
still matches when |a - b| <= atol + rtol·|b| or its distance is at most max_ulps (both finite).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Unsigned integer dtype of each float width, for bit views.
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass(frozen=True, slots=True)
class Tolerance:
    """--atol, --rtol, --max-ulps; all None: bit for bit."""

    atol: float | None = None
    rtol: float | None = None
    max_ulps: int | None = None

    @property
    def exact(self) -> bool:
        return self.atol is None and self.rtol is None and self.max_ulps is None


@dataclass(slots=True)
class ArrayDiff:
    """How two arrays of one name compare; `status` identical | within | different."""

    name: str
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    dtype_a: str
    dtype_b: str
    status: str = "identical"
    count: int = 0  # elements compared
    differ: int = 0  # not bit-identical
    beyond: int = 0  # not within the tolerance (== differ when exact)
    max_abs: float = 0.0  # over the differing elements (NaN when one side is NaN there)
    max_ulps: int = 0  # over differing elements of the same sign
    sign_changes: int = 0  # differing elements whose sign bits differ (±0 included)
    sign_change_ulps: int = 0  # their largest distance on the ordered line
    nan_mismatch: int = 0  # NaN on one side only
    first: dict = field(default_factory=dict)  # index, a, b, a_bits, b_bits (first differing)
    note: str = ""  # shape or dtype mismatch, in words
    source: str = ""  # the arrays' own names when compared under another (a mapped trace)

    @property
    def ok(self) -> bool:
        return self.status != "different"


def is_float(dtype: np.dtype) -> bool:
    """IEEE binary floats, bfloat16 (ml_dtypes) included."""
    return dtype.kind == "f" or dtype.name == "bfloat16"


def float_bits(a: np.ndarray) -> np.ndarray:
    """The raw bit patterns of a float array, as unsigned integers of its width."""
    return np.ascontiguousarray(a).view(UINT[a.dtype.itemsize])


def ordered_distance(bits_a: np.ndarray, bits_b: np.ndarray, width: int) -> np.ndarray:
    """uint64 distances on the ordered float line of `width`-byte floats (no NaN inputs)."""
    sign = np.uint64(1 << (8 * width - 1))
    ua, ub = bits_a.astype(np.uint64), bits_b.astype(np.uint64)
    ma, mb = ua & (sign - np.uint64(1)), ub & (sign - np.uint64(1))
    same = (ua & sign) == (ub & sign)
    apart = np.where(ma > mb, ma - mb, mb - ma)  # same sign: the magnitudes' distance
    return np.where(same, apart, ma + mb)  # opposite signs: each side's steps to zero


def compare_arrays(name: str, a: np.ndarray, b: np.ndarray, tol: Tolerance) -> ArrayDiff:
    """Compare a and b; a shape mismatch or a number kind mismatch is a difference."""
    d = ArrayDiff(name, tuple(a.shape), tuple(b.shape), str(a.dtype), str(b.dtype))
    if a.shape != b.shape:
        d.status, d.note = "different", f"shape {a.shape} vs {b.shape}"
        return d
    fa, fb = is_float(a.dtype), is_float(b.dtype)
    if fa != fb or (a.dtype.kind == "c") != (b.dtype.kind == "c"):
        d.status, d.note = "different", f"dtype {a.dtype} vs {b.dtype}"
        return d
    if a.dtype != b.dtype:  # compare the values in the wider type (widening is exact)
        d.note = f"dtype {a.dtype} vs {b.dtype}"
        wide = np.result_type(a.dtype, b.dtype) if not fa else _wider(a.dtype, b.dtype)
        a, b = a.astype(wide), b.astype(wide)
    d.count = int(a.size)
    if a.dtype.kind == "c":
        _compare_complex(d, a, b, tol)
    elif fa:
        _compare_floats(d, a.ravel(), b.ravel(), tol, a.shape)
    else:
        _compare_ints(d, a.ravel(), b.ravel(), tol, a.shape)
    if d.note and d.status == "identical":
        d.status = "different"  # the values agree, the dtypes do not
    return d


def _wider(x: np.dtype, y: np.dtype) -> np.dtype:
    """The wider of two float dtypes (float32 for float16 against bfloat16)."""
    if x.itemsize == y.itemsize:
        return np.dtype(np.float32)
    return x if x.itemsize > y.itemsize else y


def _compare_floats(
    d: ArrayDiff, a: np.ndarray, b: np.ndarray, tol: Tolerance, shape: tuple[int, ...]
) -> None:
    """Flat float arrays of one dtype; `shape` places the first differing element."""
    width = a.dtype.itemsize
    ba, bb = float_bits(a), float_bits(b)
    na, nb = np.isnan(a), np.isnan(b)  # ml_dtypes' bfloat16 has the ufunc too
    differ = (ba != bb) & ~(na & nb)  # two NaNs are equal whatever their payload
    d.differ = int(differ.sum())
    if not d.differ:
        return
    idx = np.flatnonzero(differ)
    va, vb = a[idx].astype(np.float64), b[idx].astype(np.float64)
    nan = na[idx] | nb[idx]
    d.nan_mismatch = int(nan.sum())
    with np.errstate(invalid="ignore", over="ignore"):
        delta = np.abs(va - vb)
    d.max_abs = float(np.max(delta)) if not nan.any() else float("nan")
    dist = ordered_distance(ba[idx], bb[idx], width)
    mask = np.uint64(1 << (8 * width - 1))
    flips = ((ba[idx] ^ bb[idx]).astype(np.uint64) & mask).astype(bool) & ~nan
    same = ~flips & ~nan
    d.max_ulps = int(dist[same].max()) if same.any() else 0
    d.sign_changes = int(flips.sum())
    d.sign_change_ulps = int(dist[flips].max()) if flips.any() else 0
    beyond = np.ones(idx.size, dtype=bool)
    if not tol.exact:
        finite = np.isfinite(va) & np.isfinite(vb)
        within = np.zeros(idx.size, dtype=bool)
        if tol.atol is not None or tol.rtol is not None:
            bound = (tol.atol or 0.0) + (tol.rtol or 0.0) * np.abs(vb)
            within |= delta <= bound
        if tol.max_ulps is not None:
            within |= dist <= np.uint64(tol.max_ulps)
        beyond = ~(within & finite)
    _finish(d, idx, beyond, shape, a, b, ba, bb, width)


def _compare_ints(
    d: ArrayDiff, a: np.ndarray, b: np.ndarray, tol: Tolerance, shape: tuple[int, ...]
) -> None:
    """Flat integer or boolean arrays; |delta| in Python integers (no wrap-around)."""
    differ = a != b
    d.differ = int(differ.sum())
    if not d.differ:
        return
    idx = np.flatnonzero(differ)
    va = [int(x) for x in a[idx]] if idx.size <= 1 << 16 else a[idx].astype(object)
    vb = [int(x) for x in b[idx]] if idx.size <= 1 << 16 else b[idx].astype(object)
    delta = [abs(x - y) for x, y in zip(va, vb, strict=True)]
    d.max_abs = float(max(delta))
    beyond = np.ones(idx.size, dtype=bool)
    if tol.atol is not None or tol.rtol is not None:
        atol, rtol = tol.atol or 0.0, tol.rtol or 0.0
        beyond = np.array([e > atol + rtol * abs(y) for e, y in zip(delta, vb, strict=True)])
    _finish(d, idx, beyond, shape, a, b, None, None, 0)


def _compare_complex(d: ArrayDiff, a: np.ndarray, b: np.ndarray, tol: Tolerance) -> None:
    """Complex values: real and imaginary parts as two float arrays side by side."""
    parts_a = np.stack([a.real, a.imag], axis=-1)
    parts_b = np.stack([b.real, b.imag], axis=-1)
    _compare_floats(d, parts_a.ravel(), parts_b.ravel(), tol, parts_a.shape)


def _finish(
    d: ArrayDiff,
    idx: np.ndarray,
    beyond: np.ndarray,
    shape: tuple[int, ...],
    a: np.ndarray,
    b: np.ndarray,
    ba: np.ndarray | None,
    bb: np.ndarray | None,
    width: int,
) -> None:
    """The verdict and the first differing element (the first beyond tolerance if any)."""
    d.beyond = int(beyond.sum())
    d.status = "different" if d.beyond else "within"
    i = int(idx[np.flatnonzero(beyond)[0]]) if d.beyond else int(idx[0])
    first = {"index": [int(k) for k in np.unravel_index(i, shape)] if shape else []}
    first["a"], first["b"] = _scalar(a[i]), _scalar(b[i])
    if ba is not None:
        first["a_bits"] = f"0x{int(ba[i]):0{2 * width}x}"
        first["b_bits"] = f"0x{int(bb[i]):0{2 * width}x}"
    d.first = first


def _scalar(x: object) -> float | int | bool:
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer | int):
        return int(x)
    return float(x)
