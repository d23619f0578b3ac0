"""Steps every ref VQF codec shares: argument checks, f32 scalar arithmetic, output shaping.

Float arithmetic is IEEE binary32 throughout (spec/vqf.md §quantisation): each step is one NumPy
float32 *scalar* operation, so every multiply, divide and add rounds separately, as the engine's
`volatile`s force.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

from weightfile.spec.codecs.vqf.registry import CODECS, payload_size, rule, shape_violation
from weightfile.spec.errors import (
    InvalidError,
    MalformedError,
    UnsupportedError,
    Violation,
    WeightfileError,
)

F32 = np.float32


@contextmanager
def ieee() -> Iterator[None]:
    """Let float32 overflow, underflow and NaN happen silently, as they do in C."""
    with np.errstate(all="ignore"):
        yield


def require_shape(name: str, rows: object, cols: object) -> None:
    """Refuse a shape the layout cannot carry (rule vqf.codec.<name>.shape / .geometry)."""
    v = shape_violation(name, rows, cols)
    if v is not None:
        raise WeightfileError.from_violation(v)


def length_error(name: str, payload: bytes, rows: int, cols: int) -> MalformedError | None:
    """The error for a payload whose length is not payload_size (rule vqf.codec.<name>.length)."""
    want = payload_size(name, rows, cols)
    if len(payload) == want:
        return None
    # The first byte that breaks the rule: where data runs out, or the first extra byte.
    return MalformedError(
        rule(name, "length"),
        f"payload is {len(payload)} bytes, [{rows} x {cols}] needs {want}",
        offset=min(len(payload), want),
        path="payload",
    )


def require_payload(name: str, payload: bytes, rows: int, cols: int) -> bytes:
    """Check shape and length before touching any byte; return the payload as bytes."""
    require_shape(name, rows, cols)
    payload = bytes(payload)
    err = length_error(name, payload, rows, cols)
    if err is not None:
        raise err
    return payload


def require_mode(name: str, mode: str) -> None:
    """Refuse an encoder mode the codec does not define (rule vqf.codec.<name>.mode)."""
    if mode not in CODECS[name].modes:
        raise UnsupportedError(rule(name, "mode"), f"mode {mode!r} not in {CODECS[name].modes}")


def input_bits(name: str, values: object, rows: int, cols: int) -> list[int]:
    """The rows·cols input values as f32 bit patterns, in flat row-major order."""
    require_shape(name, rows, cols)
    arr = np.asarray(values, dtype=np.float32)
    if arr.size != rows * cols:
        raise MalformedError(
            rule(name, "shape"), f"{arr.size} values for [{rows} x {cols}]", path="values"
        )
    return [int(b) for b in arr.reshape(-1).view(np.uint32).tolist()]


def f32_of_bits(bits: int) -> np.float32:
    """The float32 whose bit pattern is `bits`."""
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def bits_of_f32(x: np.float32) -> int:
    """The bit pattern of a float32 scalar."""
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def require_finite(name: str, bits: list[int], cols: int) -> None:
    """Quantisers are defined for finite inputs only (spec/vqf.md §quantisation leaves NaN/Inf
    undefined; refused)."""
    for i, b in enumerate(bits):
        if (b >> 23) & 0xFF == 0xFF:
            where = f"values[{i // cols}][{i % cols}]" if cols else f"values[{i}]"
            raise InvalidError(
                rule(name, "finite_input"), "quantiser input is NaN or Inf", path=where
            )


def blocks_of(xs: list[np.float32], size: int) -> Iterator[list[np.float32]]:
    """Consecutive runs of `size` values; a partial last run is padded with +0.0 (our choice,
    spec/vqf.md §size-function).

    Padding with +0.0 never changes amax or the Q4_0 maxv, so it equals quantising only the real
    elements and storing the codes of zero in the unused slots.
    """
    for start in range(0, len(xs), size):
        run = xs[start : start + size]
        yield run + [F32(0.0)] * (size - len(run))


def saturating_trunc(v: np.float32, lo: int, hi: int) -> int:
    """trunc toward zero, clamped to [lo, hi].

    C leaves float->int of NaN/Inf undefined; they arise only when 1/d overflows for a subnormal d.
    We take AArch64 FCVTZS semantics (the RK3588 board): NaN -> 0, +-Inf saturate, then clamp.
    """
    if math.isnan(v):
        return max(lo, min(hi, 0))
    if math.isinf(v):
        return hi if v > 0 else lo
    return max(lo, min(hi, math.trunc(float(v))))


def scales_shape(rows: int, cols: int, nblocks: int) -> tuple[int, ...]:
    """[rows, cols/32] when rows never share a block (spec/vqf.md §quantisation), else the flat
    block sequence."""
    return (rows, cols // 32) if cols % 32 == 0 else (nblocks,)


def values_from_bits(bits: list[int], rows: int, cols: int) -> np.ndarray:
    """A float32 [rows, cols] array from bit patterns, so NaN payloads survive exactly."""
    return np.array(bits, dtype=np.uint32).view(np.float32).reshape(rows, cols)


def validate_length(name: str, payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Shape and length violations, the first checks of every validator."""
    v = shape_violation(name, rows, cols)
    if v is not None:
        return [v]
    err = length_error(name, bytes(payload), rows, cols)
    return [err.violation] if err is not None else []


Block = TypeVar("Block")


def split_blocks(payload: bytes, size: int, unpack: Callable[[bytes], Block]) -> list[Block]:
    """Every `size`-byte block of a length-checked payload, unpacked, in storage order."""
    return [unpack(payload[o : o + size]) for o in range(0, len(payload), size)]


def quantize_blocks(
    name: str,
    values: object,
    rows: int,
    cols: int,
    mode: str,
    quantizers: Mapping[str, Callable[[list[np.float32]], tuple]],
    pack: Callable[..., bytes],
    block: int,
) -> bytes:
    """Block-quantise row-major float32 values with the mode's quantiser (spec/vqf.md §q8-0, §q4-0):
    the mode and the values are checked first, then each `block` of a row is quantised and
    packed."""
    require_mode(name, mode)
    bits = input_bits(name, values, rows, cols)
    require_finite(name, bits, cols)
    quantize = quantizers[mode]
    xs = [f32_of_bits(b) for b in bits]
    return b"".join(pack(*quantize(b)) for b in blocks_of(xs, block))
