"""`row_scale_v1`: fp8_e4m3fn_row_bf16 codes row-major, a zero gap, then BF16 row scales
(spec/ninfer3.md §fp8-row, §row-scale).

Public functions take the format name first; `codec.get_codec` binds it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.codecs.ninfer3 import fp8_row_maxabs
from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    require_values,
    sorted_violations,
)
from weightfile.ref.codecs.ninfer3.scalars import (
    bf16_scale_is_valid,
    bf16_value,
    e4m3fn_value,
    f32,
    f32_bits,
)
from weightfile.spec.codecs.ninfer3.layouts import ROW_SCALE_V1, RowScalePlanes, row_scale_planes
from weightfile.spec.codecs.ninfer3.registry import (
    CODE_DOMAIN,
    FP8_ROW_MAXABS,
    GAP_NONZERO,
    NO_ENCODER,
    ROWS,
    SCALE_INVALID,
    WORDS,
    ZERO_SCALE_NONZERO_CODE,
    rule,
)
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = ROW_SCALE_V1
NAN_CODES = (0x7F, 0xFF)
ZERO_CODES = (0x00, 0x80)


def code_position(p: RowScalePlanes, n: int, k: int) -> int:
    """Code [n, k] sits at n·K + k (spec/ninfer3.md §row-scale)."""
    return n * p.k + k


def scale_position(p: RowScalePlanes, n: int) -> int:
    """Row n's BF16 scale sits at scale_plane_offset + 2n (spec/ninfer3.md §row-scale)."""
    return p.scale_plane_offset + 2 * n


def row_violations(payload: bytes, p: RowScalePlanes, n: int) -> list[Violation]:
    """Code domain, scale validity and the zero-scale rule of one row (spec/ninfer3.md §fp8-row)."""
    found = []
    codes = [payload[code_position(p, n, k)] for k in range(p.k)]
    for k, code in enumerate(codes):
        if code in NAN_CODES:
            at = code_position(p, n, k)
            found.append(
                Violation(rule(LAYOUT, CODE_DOMAIN), "code domain", at, f"codes[{n}][{k}]")
            )
    at = scale_position(p, n)
    scale = int.from_bytes(payload[at : at + 2], "little")
    if not bf16_scale_is_valid(scale):
        found.append(Violation(rule(LAYOUT, SCALE_INVALID), "scale invalid", at, f"scales[{n}]"))
    elif scale == 0x0000 and any(c not in ZERO_CODES for c in codes):
        name = ZERO_SCALE_NONZERO_CODE
        found.append(Violation(rule(LAYOUT, name), "zero scale nonzero code", at, f"scales[{n}]"))
    return found


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every violated rule in payload order: per code byte, per row scale, per gap byte."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_scale_planes(shape)
    found = [v for n in range(p.n) for v in row_violations(payload, p, n)]
    for at in range(p.code_plane_bytes, p.scale_plane_offset):
        if payload[at] != 0:
            found.append(Violation(rule(LAYOUT, GAP_NONZERO), "gap nonzero", at, "gap"))
    return sorted_violations(found)


def pack(codes: list[list[int]], scales: list[int], p: RowScalePlanes) -> bytes:
    """Codes row-major, zero gap, LE BF16 scales (spec/ninfer3.md §row-scale)."""
    buf = bytearray(p.bytes)  # [bytes]; the gap stays zero
    for n in range(p.n):
        for k in range(p.k):
            buf[code_position(p, n, k)] = codes[n][k]
        buf[scale_position(p, n) : scale_position(p, n) + 2] = scales[n].to_bytes(2, "little")
    return bytes(buf)


def encode(
    fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = FP8_ROW_MAXABS
) -> bytes:
    """Quantise binary32 `[N, K]` with `fp8_row_maxabs` (spec/ninfer3.md §fp8-row-maxabs) and lay it
    out (spec/ninfer3.md §row-scale)."""
    shape = require_shape(LAYOUT, shape)
    if encoder != FP8_ROW_MAXABS:
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape)
    codes, scales = fp8_row_maxabs.encode_matrix(values)
    return pack(codes.tolist(), scales.tolist(), row_scale_planes(shape))


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Lay out `codes` uint8 `[N, K]` and `scales` uint16 `[N]`; the result must validate."""
    shape = require_shape(LAYOUT, shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    if codes.shape != shape or codes.dtype != np.uint8:
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be uint8 [N, K]", path="codes")
    if scales.shape != shape[:1] or scales.dtype != np.uint16:
        raise InvalidError(rule(LAYOUT, WORDS), "scales must be uint16 [N]", path="scales")
    payload = pack(codes.tolist(), scales.tolist(), row_scale_planes(shape))
    raise_first(validate(fmt_name, payload, shape))
    return payload


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Codes uint8 `[N, K]` and scale words uint16 `[N]`; no rule is checked."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_scale_planes(shape)
    codes = [[payload[code_position(p, n, k)] for k in range(p.k)] for n in range(p.n)]
    scales = [
        int.from_bytes(payload[scale_position(p, n) : scale_position(p, n) + 2], "little")
        for n in range(p.n)
    ]
    return {
        "codes": np.array(codes, dtype=np.uint8).reshape(shape),
        "scales": np.array(scales, dtype=np.uint16),
    }


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `w = f32(e4m3fn(c) × bf16(s[n]))` (spec/ninfer3.md §fp8-row)."""
    shape = require_shape(LAYOUT, shape)
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    scales = words["scales"].tolist()
    out = [
        [f32_bits(f32(e4m3fn_value(c) * bf16_value(scales[n]))) for c in row]
        for n, row in enumerate(words["codes"].tolist())
    ]  # [N][K] binary32 words
    return np.array(out, dtype=np.uint32).view(np.float32).reshape(shape)


def row_slice(fmt_name: str, payload: bytes, shape: Sequence[int], rows: Sequence[int]) -> bytes:
    """Selected code rows concatenated, the scale plane realigned, the selected scales
    (spec/ninfer3.md §row-scale)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    if not rows or any(not 0 <= r < shape[0] for r in rows):
        raise InvalidError(rule(LAYOUT, ROWS), "rows must be non-empty and inside [0, N)")
    p = row_scale_planes(shape)
    child = row_scale_planes((len(rows), shape[1]))
    buf = bytearray(child.bytes)  # [bytes]; the gap stays zero
    for i, r in enumerate(rows):
        src = code_position(p, r, 0)
        buf[code_position(child, i, 0) : code_position(child, i + 1, 0)] = payload[src : src + p.k]
        at = scale_position(child, i)
        buf[at : at + 2] = payload[scale_position(p, r) : scale_position(p, r) + 2]
    return bytes(buf)
