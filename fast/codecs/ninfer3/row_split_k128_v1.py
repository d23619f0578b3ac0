"""Vectorised `row_split_k128_v1` (ninfer-v3 §4.3); every function equals its namesake in
`ref.codecs.ninfer3.row_split_k128_v1`, bit for bit, error for error.

Whole planes are viewed as `[N, gpr, bytes per group]` arrays and split into lanes with shifts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from weightfile.fast.codecs.ninfer3 import grouped_absmax
from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    require_values,
    sorted_violations,
)
from weightfile.ref.codecs.ninfer3.row_split_k128_v1 import require_rows, row_view
from weightfile.spec.codecs.ninfer3.formats import GROUPED_FORMATS
from weightfile.spec.codecs.ninfer3.layouts import (
    ROW_SPLIT_GEOMETRY,
    ROW_SPLIT_K128_V1,
    RowSplitPlanes,
    row_split_planes,
)
from weightfile.spec.codecs.ninfer3.registry import (
    CODE_DOMAIN,
    GAP_NONZERO,
    GROUPED_ABSMAX,
    NO_ENCODER,
    PADDING_NONZERO,
    PADDING_SCALE_NONZERO,
    SCALE_INVALID,
    WORDS,
    ZERO_SCALE_NONZERO_CODE,
    rule,
)
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = ROW_SPLIT_K128_V1
__all__ = [
    "decode",
    "decode_words",
    "encode",
    "encode_words",
    "row_slice",
    "row_view",
    "validate",
]


def fields(plane: np.ndarray, width: int) -> np.ndarray:
    """Split bytes `[..., B]` into `8/width` fields each, lowest bits first: `[..., B·8/width]`."""
    shifts = np.arange(0, 8, width, dtype=np.uint8)
    out = (plane[..., None] >> shifts) & np.uint8((1 << width) - 1)
    return out.reshape(*plane.shape[:-1], -1)


def join(values: np.ndarray, width: int) -> np.ndarray:
    """Inverse of `fields`: `[..., L]` fields of `width` bits packed into `[..., L·width/8]`."""
    per_byte = 8 // width
    v = values.reshape(*values.shape[:-1], -1, per_byte).astype(np.uint8)
    out = np.zeros(v.shape[:-1], dtype=np.uint8)
    for j in range(per_byte):
        out |= v[..., j] << np.uint8(j * width)
    return out


def base_width(fmt_name: str) -> int:
    """Bits of a lane in the base plane: 4 (q4/q5/q6), 8 (q8) or 2 (t2)."""
    return min(ROW_SPLIT_GEOMETRY[fmt_name].code_bits, 4 if fmt_name != "q8_g32_fp16" else 8)


def planes(fmt_name: str, buf: np.ndarray, p: RowSplitPlanes) -> tuple[np.ndarray, np.ndarray]:
    """The base plane `[N, gpr, B]` and high plane `[N, gpr, H]` of a payload."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    base = buf[p.base_offset : p.base_offset + p.base_bytes]
    high = buf[p.high_offset : p.high_offset + p.high_bytes]
    return (
        base.reshape(p.n, p.gpr, geo.base_bytes_per_group),
        high.reshape(p.n, p.gpr, geo.high_bytes_per_group),
    )


def lane_words(fmt_name: str, base: np.ndarray, high: np.ndarray) -> np.ndarray:
    """u `[N, gpr, G]` from the base fields and the high bits (§4.3)."""
    u = fields(base, base_width(fmt_name))
    if high.shape[-1]:
        u |= fields(high, ROW_SPLIT_GEOMETRY[fmt_name].code_bits - 4) << np.uint8(4)
    return u


def signed(u: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement value of b-bit words, as int16."""
    q = u.astype(np.int16)
    return np.where(q >= 1 << (bits - 1), q - (1 << bits), q)


def scale_words(buf: np.ndarray, p: RowSplitPlanes) -> np.ndarray:
    """Every physical group's scale word `[N, gpr]`."""
    raw = buf[p.scale_offset : p.scale_offset + p.scale_bytes]
    return raw.view("<u2").astype(np.uint16).reshape(p.n, p.gpr)


def pack(fmt_name: str, codes: np.ndarray, scales: np.ndarray, p: RowSplitPlanes) -> bytes:
    """Lay logical codes `[N, K]` and scales `[N, groups]` out with zero padding and gaps."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    u = np.zeros((p.n, p.k_pad), dtype=np.uint8)
    u[:, : p.k] = codes.astype(np.int16) % (1 << geo.code_bits)  # u = q mod 2^b
    u = u.reshape(p.n, p.gpr, geo.group_size)
    buf = np.zeros(p.bytes, dtype=np.uint8)
    width = base_width(fmt_name)
    buf[p.base_offset : p.base_offset + p.base_bytes] = join(u & ((1 << width) - 1), width).ravel()
    if geo.high_bytes_per_group:
        high = join(u >> np.uint8(4), geo.code_bits - 4).ravel()
        buf[p.high_offset : p.high_offset + p.high_bytes] = high
    s = np.zeros((p.n, p.gpr), dtype="<u2")
    s[:, : p.logical_groups] = scales
    buf[p.scale_offset :] = s.view(np.uint8).ravel()
    return buf.tobytes()


def byte_findings(
    flags: np.ndarray, plane_offset: int, lanes_per_byte: int, p: RowSplitPlanes, name: str
) -> dict[tuple[int, str], str]:
    """Per-lane flags `[N, gpr, G]` -> {(byte offset, rule): path of the first flagged lane}."""
    per_byte = flags.reshape(p.n, -1, lanes_per_byte)  # [N, bytes per row, lanes]
    hit_rows, hit_bytes = np.nonzero(per_byte.any(axis=2))
    first = per_byte[hit_rows, hit_bytes].argmax(axis=1)
    row_bytes = per_byte.shape[1]
    return {
        (plane_offset + int(r) * row_bytes + int(b), name): f"codes[{r}][{b * lanes_per_byte + f}]"
        for r, b, f in zip(hit_rows.tolist(), hit_bytes.tolist(), first.tolist(), strict=True)
    }


def group_findings(flags: np.ndarray, p: RowSplitPlanes, name: str) -> dict:
    """Group flags `[N, gpr]` -> {(scale offset, rule): path}."""
    rows, groups = np.nonzero(flags)
    return {
        (p.scale_offset + 2 * (r * p.gpr + g), name): f"scales[{r}][{g}]"
        for r, g in zip(rows.tolist(), groups.tolist(), strict=True)
    }


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every violated rule, one record per (byte, rule), in payload order (ref.validate)."""
    shape = require_shape(LAYOUT, tuple(shape))
    require_length(fmt_name, LAYOUT, payload, shape)
    fmt = GROUPED_FORMATS[fmt_name]
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    p = row_split_planes(fmt_name, shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    base, high = planes(fmt_name, buf, p)
    u = lane_words(fmt_name, base, high)  # [N, gpr, G]
    padding = (np.arange(p.k_pad) >= p.k).reshape(1, p.gpr, geo.group_size)
    logical_groups = np.arange(p.gpr) < p.logical_groups  # [gpr]
    width = base_width(fmt_name)
    found: dict[tuple[int, str], str] = {}
    base_bits = u & np.uint8((1 << width) - 1)
    found |= byte_findings(
        padding & (base_bits != 0), p.base_offset, 8 // width, p, PADDING_NONZERO
    )
    if geo.high_bytes_per_group:
        hw = geo.code_bits - 4
        hi = padding & ((u >> np.uint8(4)) != 0)
        found |= byte_findings(hi, p.high_offset, 8 // hw, p, PADDING_NONZERO)
    illegal = np.isin(signed(u, fmt.code_bits), fmt.illegal_codes) & ~padding
    found |= byte_findings(illegal, p.base_offset, 8 // width, p, CODE_DOMAIN)
    s = scale_words(buf, p)
    invalid = ((s >> 15) != 0) | (((s >> 10) & 0x1F) == 0x1F)
    nonzero_code = ((u != 0) & ~padding).any(axis=2)
    found |= group_findings(~logical_groups & (s != 0), p, PADDING_SCALE_NONZERO)
    found |= group_findings(logical_groups & invalid, p, SCALE_INVALID)
    found |= group_findings(logical_groups & (s == 0) & nonzero_code, p, ZERO_SCALE_NONZERO_CODE)
    for lo, hi_end in (
        (p.base_bytes, p.high_offset),
        (p.high_offset + p.high_bytes, p.scale_offset),
    ):
        for at in (np.flatnonzero(buf[lo:hi_end]) + lo).tolist():
            found[(at, GAP_NONZERO)] = "gap"
    return sorted_violations(
        Violation(rule(LAYOUT, name), name.replace("_", " "), offset=at, path=path)
        for (at, name), path in found.items()
    )


def check_words(fmt_name: str, p: RowSplitPlanes, codes: np.ndarray, scales: np.ndarray) -> None:
    """Same checks, same order, as ref.check_words."""
    bits = GROUPED_FORMATS[fmt_name].code_bits
    if codes.shape != (p.n, p.k):
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be [N, K]", path="codes")
    if scales.shape != (p.n, p.logical_groups):
        raise InvalidError(rule(LAYOUT, WORDS), "scales must be [N, ceil(K/G)]", path="scales")
    if codes.size and (codes.min() < -(1 << (bits - 1)) or codes.max() > (1 << (bits - 1)) - 1):
        raise InvalidError(rule(LAYOUT, WORDS), "code outside the code width", path="codes")
    if scales.size and (scales.min() < 0 or scales.max() > 0xFFFF):
        raise InvalidError(rule(LAYOUT, WORDS), "scale is not a 16-bit word", path="scales")


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Pack logical `codes` [N, K] and `scales` [N, ceil(K/G)]; the result must validate."""
    shape = require_shape(LAYOUT, tuple(shape))
    p = row_split_planes(fmt_name, shape)
    codes = np.asarray(words["codes"]).astype(np.int64)
    scales = np.asarray(words["scales"]).astype(np.int64)
    check_words(fmt_name, p, codes, scales)
    payload = pack(fmt_name, codes, scales.astype(np.uint16), p)
    raise_first(validate(fmt_name, payload, shape))
    return payload


def encode(
    fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = GROUPED_ABSMAX
) -> bytes:
    """Quantise with `grouped_absmax` (§3.6) and pack (§4.3), as ref.encode."""
    shape = require_shape(LAYOUT, tuple(shape))
    if encoder != GROUPED_ABSMAX or fmt_name == "t2_g128_fp16":
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape)
    codes, scales = grouped_absmax.encode_matrix(GROUPED_FORMATS[fmt_name], values)
    return pack(fmt_name, codes, scales, row_split_planes(fmt_name, shape))


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Logical codes int8 `[N, K]` and scale words uint16 `[N, ceil(K/G)]`; no rule is checked."""
    shape = require_shape(LAYOUT, tuple(shape))
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_split_planes(fmt_name, shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    u = lane_words(fmt_name, *planes(fmt_name, buf, p)).reshape(p.n, p.k_pad)[:, : p.k]
    codes = signed(u, GROUPED_FORMATS[fmt_name].code_bits).astype(np.int8)
    return {"codes": codes, "scales": scale_words(buf, p)[:, : p.logical_groups].copy()}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `w = f32(s32 × q)` (§3.3), as ref.decode."""
    shape = require_shape(LAYOUT, tuple(shape))
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    g_size = ROW_SPLIT_GEOMETRY[fmt_name].group_size
    s32 = words["scales"].view(np.float16).astype(np.float32)  # exact widening
    s32 = np.repeat(s32, g_size, axis=1)[:, : shape[1]]
    return s32 * words["codes"].astype(np.float32)  # one correctly rounded f32 multiply


def row_slice(fmt_name: str, payload: bytes, shape: Sequence[int], rows: Sequence[int]) -> bytes:
    """A standalone `[len(rows), K]` payload: row spans concatenated per plane (§4.3)."""
    shape = require_shape(LAYOUT, tuple(shape))
    require_length(fmt_name, LAYOUT, payload, shape)
    require_rows(shape, rows)
    p = row_split_planes(fmt_name, shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    base, high = planes(fmt_name, buf, p)
    idx = np.asarray(rows, dtype=np.int64)
    s = scale_words(buf, p)[idx]
    child = row_split_planes(fmt_name, (len(idx), shape[1]))
    out = np.zeros(child.bytes, dtype=np.uint8)
    out[child.base_offset : child.base_offset + child.base_bytes] = base[idx].ravel()
    out[child.high_offset : child.high_offset + child.high_bytes] = high[idx].ravel()
    out[child.scale_offset :] = s.astype("<u2").view(np.uint8).ravel()
    return out.tobytes()
