"""Hypothesis strategies for the `.ninfer` v3 codecs, named after what they draw.

* `shapes(layout)` — shapes the layout accepts, small enough for ref (partial groups, K not a
  multiple of 128, nvfp4's 128-row and 64-lane tiles);
* `float32_matrices(shape)` — binary32 values with ties, subnormals, signed zeros, extremes and,
  when asked, NaN/Inf;
* `payloads(format, layout, shape)` — bytes of exactly the encoded size: all-random, or valid
  words with a few bytes flipped;
* `valid_words(format, layout, shape)` — words that pack into a valid payload.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from weightfile.spec.codecs.ninfer3.formats import GROUPED_FORMATS
from weightfile.spec.codecs.ninfer3.layouts import (
    BLOCK_SCALE_K16_M128X4_V1,
    CONTIGUOUS_LE_V1,
    RAW_BYTES_V1,
    ROW_SCALE_V1,
    ROW_SPLIT_K128_V1,
    encoded_size,
)

#: binary32 words worth hitting on purpose: zeros, subnormal extremes, the largest finite, ties.
SPECIAL_F32_BITS = (
    0x00000000,  # +0
    0x80000000,  # -0
    0x00000001,  # smallest subnormal
    0x807FFFFF,  # largest negative subnormal
    0x00800000,  # smallest normal
    0x7F7FFFFF,  # largest finite
    0xFF7FFFFF,
    0x3F808000,  # 1 + 2^-8: a BF16 tie (rounds to even, down)
    0x3F818000,  # 1 + 3·2^-8: a BF16 tie (rounds up)
    0x33800000,  # 2^-24: the binary16 rescue scale
)
NONFINITE_F32_BITS = (0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001)


def float32_elements(allow_nonfinite: bool) -> st.SearchStrategy[float]:
    """Single binary32 values from a mix of wide, tie-heavy and special draws."""
    specials = SPECIAL_F32_BITS + (NONFINITE_F32_BITS if allow_nonfinite else ())
    as_float = [float(np.uint32(b).view(np.float32)) for b in specials]
    return st.one_of(
        st.floats(width=32, allow_nan=allow_nonfinite, allow_infinity=allow_nonfinite),
        st.integers(-300, 300).map(lambda i: i / 2),  # x.5 ties after a 1.0 scale
        st.integers(-(2**10), 2**10).map(lambda i: i * 2.0**-12),
        st.sampled_from(as_float),
    )


@st.composite
def float32_matrices(
    draw: st.DrawFn, shape: tuple[int, ...], allow_nonfinite: bool = False
) -> np.ndarray:
    """A float32 array of `shape`; values scaled per draw so groups see many magnitudes."""
    values = draw(
        hnp.arrays(np.float32, shape, elements=float32_elements(allow_nonfinite), fill=st.nothing())
    )
    scale = np.float32(2.0 ** draw(st.integers(-30, 30)))
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values * scale
    if not allow_nonfinite and not np.isfinite(scaled).all():
        return values
    return draw(st.sampled_from([values, scaled]))


@st.composite
def shapes(draw: st.DrawFn, layout: str) -> tuple[int, ...]:
    """A small shape the layout accepts."""
    if layout == CONTIGUOUS_LE_V1:
        return tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    if layout == RAW_BYTES_V1:
        return (draw(st.integers(1, 64)),)
    if layout == BLOCK_SCALE_K16_M128X4_V1:
        return (128 * draw(st.integers(1, 2)), 64 * draw(st.integers(1, 2)))
    k = draw(st.one_of(st.integers(1, 140), st.sampled_from([32, 63, 64, 65, 127, 128, 129, 256])))
    return (draw(st.integers(1, 3)), k)


@st.composite
def valid_words(
    draw: st.DrawFn, fmt: str | None, layout: str, shape: tuple[int, ...]
) -> dict[str, np.ndarray]:
    """Logical words that pack into a valid payload (domains, scale rules, zero-scale rule)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if layout == ROW_SPLIT_K128_V1:
        f = GROUPED_FORMATS[fmt]
        n, k = shape
        groups = -(-k // f.group_size)
        codes = rng.integers(f.qmin, f.qmax + 1, size=shape).astype(np.int8)
        scales = rng.integers(0, 0x7C00, size=(n, groups)).astype(np.uint16)  # +0 or finite > 0
        zero_groups = rng.random((n, groups)) < 0.2
        scales[zero_groups] = 0
        lane_zero = np.repeat(scales == 0, f.group_size, axis=1)[:, :k]
        codes[lane_zero] = 0
        return {"codes": codes, "scales": scales}
    if layout == ROW_SCALE_V1:
        codes = rng.integers(0, 256, size=shape).astype(np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x7E
        scales = rng.integers(0, 0x7F80, size=shape[:1]).astype(np.uint16)
        codes[scales == 0] &= 0x80
        return {"codes": codes, "scales": scales}
    if layout == BLOCK_SCALE_K16_M128X4_V1:
        n, k = shape
        divisor = draw(
            st.sampled_from([0x00000001, 0x3F800000, 0x7F7FFFFF, 0x40400000, 0x3B000000])
        )
        return {
            "codes": rng.integers(0, 16, size=shape).astype(np.uint8),
            "scales": rng.integers(0, 0x7F, size=(n, k // 16)).astype(np.uint8),
            "divisor": np.array(divisor, dtype=np.uint32),
        }
    if layout == RAW_BYTES_V1:
        return {"bytes": rng.integers(0, 256, size=shape).astype(np.uint8)}
    dtype = {"bf16": np.uint16, "fp32": np.uint32, "int32": np.int32}[fmt]
    info = np.iinfo(dtype)
    return {"codes": rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)}


@st.composite
def payloads(draw: st.DrawFn, fmt: str | None, layout: str, shape: tuple[int, ...]) -> bytes:
    """Bytes of exactly the encoded size: random, or a valid payload with a few bytes flipped."""
    from weightfile.fast.codecs.ninfer3.codec import get_codec  # the packer is not under test here

    size = encoded_size(fmt or "", layout, shape)
    if draw(st.booleans()):
        seed = draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        raw = rng.integers(0, 256, size=size, dtype=np.uint8)
        raw[rng.random(size) < draw(st.sampled_from([0.0, 0.9, 0.99]))] = 0
        return raw.tobytes()
    buf = bytearray(
        get_codec(fmt, layout).encode_words(draw(valid_words(fmt, layout, shape)), shape)
    )
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, size - 1))
        buf[at] = draw(st.integers(0, 255))
    return bytes(buf)


# --- outcome comparison for the differential tests ---------------------------------------------


def outcome(fn, *args, **kwargs) -> tuple:
    """("ok", result) or (error class, rule, offset, path): what fast and ref must agree on."""
    from weightfile.spec.errors import WeightfileError

    try:
        return ("ok", fn(*args, **kwargs))
    except WeightfileError as e:
        return (type(e).__name__, e.rule, e.offset, e.path)


def describe_mismatch(a: np.ndarray, b: np.ndarray) -> str:
    """First differing element, its XOR bit count and both words in hex."""
    ua, ub = a.reshape(-1).view(f"u{a.itemsize}"), b.reshape(-1).view(f"u{b.itemsize}")
    i = int(np.argmax(ua != ub))
    xor = int(ua[i]) ^ int(ub[i])
    return f"element {i}: ref {int(ua[i]):#x} fast {int(ub[i]):#x} ({bin(xor).count('1')} bits)"


def assert_identical(ref: object, fast: object) -> None:
    """Same bytes, same dtype, same shape (unsigned views, never float tolerance)."""
    if isinstance(ref, tuple) and ref and ref[0] == "ok":
        assert isinstance(fast, tuple) and fast[0] == "ok", f"ref ok, fast {fast}"
        assert_identical(ref[1], fast[1])
    elif isinstance(ref, np.ndarray):
        assert isinstance(fast, np.ndarray)
        assert (ref.dtype, ref.shape) == (fast.dtype, fast.shape), (ref.dtype, fast.dtype)
        assert ref.tobytes() == fast.tobytes(), describe_mismatch(ref, fast)
    elif isinstance(ref, dict):
        assert isinstance(fast, dict) and ref.keys() == fast.keys()
        for key in ref:
            assert_identical(ref[key], fast[key])
    elif isinstance(ref, bytes) and ref != fast:
        assert isinstance(fast, bytes) and len(ref) == len(fast)
        at = next(i for i in range(len(ref)) if ref[i] != fast[i])
        raise AssertionError(f"byte {at}: ref {ref[at]:#04x} fast {fast[at]:#04x}")
    else:
        assert ref == fast, f"ref {ref} != fast {fast}"
