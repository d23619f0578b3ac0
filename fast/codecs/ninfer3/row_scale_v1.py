"""Vectorised `row_scale_v1` (spec/ninfer3.md §row-scale); equals
`ref.codecs.ninfer3.row_scale_v1`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast.codecs.ninfer3 import fp8_row_maxabs
from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    require_values,
    sorted_violations,
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
__all__ = ["decode", "decode_words", "encode", "encode_words", "row_slice", "validate"]


def e4m3fn_table() -> np.ndarray:
    """float32 value of all 256 E4M3FN words, from the spec/ninfer3.md §nvfp4 fields (0x7F/0xFF are
    NaN)."""
    w = np.arange(256, dtype=np.int64)
    e, m = (w >> 3) & 0xF, w & 0x7
    mag = np.where(e == 0, m * 2.0**-9, (1 + m / 8) * 2.0 ** (e - 7))
    mag = np.where((e == 15) & (m == 7), np.nan, mag)
    return np.where(w & 0x80, -mag, mag).astype(np.float32)


E4M3FN_TABLE = e4m3fn_table()


def planes(buf: np.ndarray, p: RowScalePlanes) -> tuple[np.ndarray, np.ndarray]:
    """Codes `[N, K]` and scale words `[N]`."""
    codes = buf[: p.code_plane_bytes].reshape(p.n, p.k)
    scales = buf[p.scale_plane_offset :].view("<u2").astype(np.uint16)
    return codes, scales


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every violated rule in payload order (ref.validate)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_scale_planes(shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    codes, scales = planes(buf, p)
    found = []
    nan_rows, nan_cols = np.nonzero((codes & 0x7F) == 0x7F)
    for n, k in zip(nan_rows.tolist(), nan_cols.tolist(), strict=True):
        at = n * p.k + k
        found.append(Violation(rule(LAYOUT, CODE_DOMAIN), "code domain", at, f"codes[{n}][{k}]"))
    invalid = ((scales >> 15) != 0) | (((scales >> 7) & 0xFF) == 0xFF)
    zero_rule = ~invalid & (scales == 0) & ((codes & 0x7F) != 0).any(axis=1)
    for n in np.flatnonzero(invalid).tolist():
        at = p.scale_plane_offset + 2 * n
        found.append(Violation(rule(LAYOUT, SCALE_INVALID), "scale invalid", at, f"scales[{n}]"))
    for n in np.flatnonzero(zero_rule).tolist():
        at = p.scale_plane_offset + 2 * n
        name = ZERO_SCALE_NONZERO_CODE
        found.append(Violation(rule(LAYOUT, name), "zero scale nonzero code", at, f"scales[{n}]"))
    gap = buf[p.code_plane_bytes : p.scale_plane_offset]
    for at in (np.flatnonzero(gap) + p.code_plane_bytes).tolist():
        found.append(Violation(rule(LAYOUT, GAP_NONZERO), "gap nonzero", at, "gap"))
    return sorted_violations(found)


def pack(codes: np.ndarray, scales: np.ndarray, p: RowScalePlanes) -> bytes:
    """Codes row-major, zero gap, LE BF16 scales."""
    buf = np.zeros(p.bytes, dtype=np.uint8)
    buf[: p.code_plane_bytes] = codes.ravel()
    buf[p.scale_plane_offset :] = scales.astype("<u2").view(np.uint8)
    return buf.tobytes()


def encode(
    fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = FP8_ROW_MAXABS
) -> bytes:
    """Quantise with `fp8_row_maxabs` (spec/ninfer3.md §fp8-row-maxabs) and lay out (spec/ninfer3.md
    §row-scale), as ref.encode."""
    shape = require_shape(LAYOUT, shape)
    if encoder != FP8_ROW_MAXABS:
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape)
    codes, scales = fp8_row_maxabs.encode_matrix(values)
    return pack(codes, scales, row_scale_planes(shape))


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Lay out `codes` uint8 `[N, K]` and `scales` uint16 `[N]`; must validate (ref)."""
    shape = require_shape(LAYOUT, shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    if codes.shape != shape or codes.dtype != np.uint8:
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be uint8 [N, K]", path="codes")
    if scales.shape != shape[:1] or scales.dtype != np.uint16:
        raise InvalidError(rule(LAYOUT, WORDS), "scales must be uint16 [N]", path="scales")
    payload = pack(codes, scales, row_scale_planes(shape))
    raise_first(validate(fmt_name, payload, shape))
    return payload


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Codes uint8 `[N, K]` and scale words uint16 `[N]`; no rule is checked (ref)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    codes, scales = planes(np.frombuffer(payload, dtype=np.uint8), row_scale_planes(shape))
    return {"codes": codes.copy(), "scales": scales}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `w = f32(e4m3fn(c) × bf16(s[n]))` (ref.decode)."""
    shape = require_shape(LAYOUT, shape)
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    s32 = (words["scales"].astype(np.uint32) << np.uint32(16)).view(np.float32)
    with np.errstate(over="ignore"):  # 448 × a large scale is +-inf, as in ref
        return E4M3FN_TABLE[words["codes"]] * s32[:, None]


def row_slice(fmt_name: str, payload: bytes, shape: Sequence[int], rows: Sequence[int]) -> bytes:
    """Selected code rows, realigned scale plane, selected scales (ref.row_slice)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    if not rows or any(not 0 <= r < shape[0] for r in rows):
        raise InvalidError(rule(LAYOUT, ROWS), "rows must be non-empty and inside [0, N)")
    codes, scales = planes(np.frombuffer(payload, dtype=np.uint8), row_scale_planes(shape))
    idx = np.asarray(rows, dtype=np.int64)
    return pack(codes[idx], scales[idx], row_scale_planes((len(idx), shape[1])))
