"""Hypothesis strategies for the VQF codecs: float32 inputs with the hard cases, shapes per layout,
payloads of the right length, and mostly-valid payloads with a few bytes flipped."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from weightfile.fast.codecs.vqf import _native as native
from weightfile.spec.codecs.vqf.registry import CODECS, payload_size
from weightfile.spec.errors import WeightfileError

#: f32 bit patterns every codec must get right: signed zeros, the smallest and largest subnormal,
#: the f16 boundaries (2^-25 tie, 2^-24, 2^-14, 65504, 65520), ±0.5 and the Q8 tie 0.5 - 2^-25.
SPECIAL_F32 = np.array(
    [
        0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 2.0**-25, 2.0**-24, 2.0**-14,
        65504.0, 65519.996, 65520.0, -65520.0, 0.5, -0.5, 0.5 - 2.0**-25, 1.0, -1.0, 8.5, -8.0,
        127.0, -127.0, 1e-10, 1.27e-8, 3.4028235e38, -3.4028235e38, 1e-6,
    ],
    dtype=np.float32,
)  # fmt: skip


def finite_f32() -> st.SearchStrategy[float]:
    """Any finite float32, biased towards small magnitudes, ties and the special values above."""
    return st.one_of(
        st.floats(width=32, allow_nan=False, allow_infinity=False),
        st.floats(-4.0, 4.0, width=32),
        st.integers(-64, 64).map(lambda k: k / 4),  # exact halves and quarters: rounding ties
        st.sampled_from(SPECIAL_F32.tolist()),
    )


def any_f32_bits() -> st.SearchStrategy[int]:
    """Any float32 bit pattern, NaN payloads and infinities included."""
    return st.one_of(
        st.integers(0, 2**32 - 1),
        st.sampled_from([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x80000000]),
    )


@st.composite
def shapes(draw: st.DrawFn, name: str, max_rows: int = 12, max_cols: int = 96) -> tuple[int, int]:
    """A small [rows, cols] the layout accepts: any for untiled codecs (partial blocks included),
    multiples of the row group and of 32 for tiled ones."""
    c = CODECS[name]
    if c.row_group == 1:
        rows = draw(st.integers(0, max_rows))
        cols = draw(st.integers(0, max_cols))
        return rows, cols
    rows = c.row_group * draw(st.integers(0, max(1, max_rows // c.row_group)))
    cols = 32 * draw(st.integers(0, max(1, max_cols // 32)))
    return rows, cols


@st.composite
def matrices(draw: st.DrawFn, name: str, max_rows: int = 12, max_cols: int = 96) -> np.ndarray:
    """A finite float32 matrix of a shape the layout accepts."""
    rows, cols = draw(shapes(name, max_rows, max_cols))
    scale = draw(st.sampled_from([1.0, 1e-3, 1e-9, 1e-30, 1e4]))
    base = draw(hnp.arrays(np.float32, (rows, cols), elements=finite_f32()))
    with np.errstate(all="ignore"):
        scaled = (base * np.float32(scale)).astype(np.float32)
    # Mix scaled and unscaled elements so blocks see both tiny and large magnitudes.
    pick = draw(hnp.arrays(np.bool_, (rows, cols))) & np.isfinite(scaled)  # no overflow to Inf
    return np.where(pick, scaled, base).astype(np.float32)


@st.composite
def payloads(draw: st.DrawFn, name: str) -> tuple[bytes, int, int]:
    """Arbitrary bytes of exactly the right length for a drawn shape."""
    rows, cols = draw(shapes(name))
    n = payload_size(name, rows, cols)
    return draw(st.binary(min_size=n, max_size=n)), rows, cols


@st.composite
def flipped(draw: st.DrawFn, payload: bytes) -> bytes:
    """The payload with up to three bytes replaced."""
    if not payload:
        return payload
    out = bytearray(payload)
    for _ in range(draw(st.integers(1, 3))):
        out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
    return bytes(out)


# --- spec/vqf.md §test-vectors worked vectors (hex from the spec, not from running the code) ---

#: x_i = f32((i - 12)·0.1), i = 0..31.
WORKED_X = np.array([(i - 12) * 0.1 for i in range(32)], dtype=np.float32)
WORKED_Q8_0 = "a923b0b6bdc4cbd1d8dfe5ecf3f900070d141b21282f353c434a50575e646b72787f"
WORKED_Q4_0 = "9ab36d6d5c5c5b4b4b3a3a39292818180707"
ZERO_Q8_0 = "00" * 34
ZERO_Q4_0 = "003c" + "88" * 16


# --- fast == ref comparison helpers (shared by tests/differential/test_vqf_*_fast_eq_ref.py) ---


def outcome(call: Callable[[], object]) -> object:
    """The call's result, or its error as (class name, rule, offset, path)."""
    try:
        return call()
    except WeightfileError as e:
        return (type(e).__name__, e.rule, e.offset, e.path)


def _first_bad_block(a: bytes, b: bytes, block: int) -> str:
    """The first differing block index, its XOR bit count, and both blocks in hex."""
    n = min(len(a), len(b))
    i = next((k for k in range(n) if a[k] != b[k]), n)
    k = i // block
    fa, fb = a[k * block : (k + 1) * block], b[k * block : (k + 1) * block]
    bits = sum(bin(x ^ y).count("1") for x, y in zip(fa, fb, strict=False))
    return f"block {k} differs in {bits} bits:\n fast {fa.hex()}\n ref  {fb.hex()}"


def assert_same(fast: object, ref: object, block: int = 34) -> None:
    """Identical bytes, arrays (dtype, shape and bits), word dicts, lists or errors."""
    if isinstance(ref, bytes):
        assert isinstance(fast, bytes), f"fast gave {fast!r}, ref gave bytes"
        assert fast == ref, _first_bad_block(fast, ref, block)
    elif isinstance(ref, np.ndarray):
        assert isinstance(fast, np.ndarray), f"fast gave {fast!r}"
        assert (fast.dtype, fast.shape) == (ref.dtype, ref.shape)
        assert fast.tobytes() == ref.tobytes(), _first_bad_block(fast.tobytes(), ref.tobytes(), 128)
    elif isinstance(ref, dict):
        assert isinstance(fast, dict) and fast.keys() == ref.keys()
        for k in ref:
            assert_same(fast[k], ref[k], block)
    else:
        assert fast == ref


def same_outcome(
    fast_call: Callable[[], object], ref_call: Callable[[], object], block: int
) -> None:
    """fast and ref agree: the same result bit for bit, or the same error (class, rule, offset).

    fast is run twice: with its C kernels (when they load) and on its NumPy paths.
    """
    want = outcome(ref_call)
    assert_same(outcome(fast_call), want, block)
    with native.disabled():
        assert_same(outcome(fast_call), want, block)
