"""Vectorised `row_split_k128_v1` (spec/ninfer3.md §row-split); every function equals its namesake
in `ref.codecs.ninfer3.row_split_k128_v1`, bit for bit, error for error.

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
    per_byte = 8 // width
    out = np.empty((*plane.shape, per_byte), dtype=np.uint8)
    mask = np.uint8((1 << width) - 1)
    for j in range(per_byte):  # strided writes beat a broadcast shift over a length-2 axis
        np.bitwise_and(plane >> np.uint8(j * width), mask, out=out[..., j])
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
    """Bits of a lane in the base plane, B·8/G: 4 (q4/q5/q6), 8 (q8) or 2 (t2)."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    return geo.base_bytes_per_group * 8 // geo.group_size


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
    """u `[N, gpr, G]` from the base fields and the high bits (spec/ninfer3.md §row-split)."""
    u = fields(base, base_width(fmt_name))
    if high.shape[-1]:
        u |= fields(high, ROW_SPLIT_GEOMETRY[fmt_name].code_bits - 4) << np.uint8(4)
    return u


def code_table(bits: int, dtype: type) -> np.ndarray:
    """Two's-complement value of every b-bit word u, indexed by u (spec/ninfer3.md §grouped-formats
    Codes)."""
    u = np.arange(1 << bits, dtype=np.int64)
    return np.where(u >= 1 << (bits - 1), u - (1 << bits), u).astype(dtype)


def scale_words(buf: np.ndarray, p: RowSplitPlanes) -> np.ndarray:
    """Every physical group's scale word `[N, gpr]`."""
    raw = buf[p.scale_offset : p.scale_offset + p.scale_bytes]
    return raw.view("<u2").astype(np.uint16).reshape(p.n, p.gpr)


def pack(fmt_name: str, codes: np.ndarray, scales: np.ndarray, p: RowSplitPlanes) -> bytes:
    """Lay logical codes `[N, K]` and scales `[N, groups]` out with zero padding and gaps."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    u = np.zeros((p.n, p.k_pad), dtype=np.uint8)
    # u = q mod 2^b: the int8 word's low b bits (codes are checked to fit b bits)
    u[:, : p.k] = codes.astype(np.int8, copy=False).view(np.uint8) & np.uint8(
        (1 << geo.code_bits) - 1
    )
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
    flags: np.ndarray,
    plane_offset: int,
    row_bytes: int,
    first_lane: int,
    lanes_per_byte: int,
    name: str,
) -> dict[tuple[int, str], str]:
    """Lane flags `[N, L]` for lanes `first_lane..` -> {(byte offset, rule): first flagged lane}.

    `first_lane` is a multiple of `lanes_per_byte`, so flag column j belongs to byte
    `(first_lane + j) // lanes_per_byte` of its row.
    """
    per_byte = flags.reshape(flags.shape[0], -1, lanes_per_byte)
    hit_rows, hit_bytes = np.nonzero(per_byte.any(axis=2))
    if not hit_rows.size:
        return {}
    first = per_byte[hit_rows, hit_bytes].argmax(axis=1)
    byte0 = first_lane // lanes_per_byte
    return {
        (
            plane_offset + r * row_bytes + byte0 + b,
            name,
        ): f"codes[{r}][{first_lane + b * lanes_per_byte + f}]"
        for r, b, f in zip(hit_rows.tolist(), hit_bytes.tolist(), first.tolist(), strict=True)
    }


def group_findings(flags: np.ndarray, p: RowSplitPlanes, first_group: int, name: str) -> dict:
    """Group flags `[N, groups]` for groups `first_group..` -> {(scale offset, rule): path}."""
    rows, groups = np.nonzero(flags)
    return {
        (
            p.scale_offset + 2 * (r * p.gpr + first_group + g),
            name,
        ): f"scales[{r}][{first_group + g}]"
        for r, g in zip(rows.tolist(), groups.tolist(), strict=True)
    }


def padding_findings(fmt_name: str, p: RowSplitPlanes, u2: np.ndarray) -> dict:
    """Non-zero bits of padding lanes (columns >= K), in the base and the high plane."""
    if p.k == p.k_pad:
        return {}
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    found: dict[tuple[int, str], str] = {}
    width = base_width(fmt_name)
    planes_to_check = [(width, p.base_offset, p.base_row_stride, np.uint8((1 << width) - 1), 0)]
    if geo.high_bytes_per_group:
        planes_to_check.append(
            (geo.code_bits - 4, p.high_offset, p.high_row_stride, np.uint8(0xFF), 4)
        )
    for bits, offset, stride, mask, shift in planes_to_check:
        per_byte = 8 // bits
        start = p.k // per_byte * per_byte  # the byte holding lane K starts here
        flags = ((u2[:, start:] >> np.uint8(shift)) & mask) != 0
        flags[:, : p.k - start] = False  # logical lanes sharing the byte are not padding
        found |= byte_findings(flags, offset, stride, start, per_byte, PADDING_NONZERO)
    return found


def code_domain_findings(fmt_name: str, p: RowSplitPlanes, u2: np.ndarray) -> dict:
    """Logical lanes holding an illegal code (Q8 0x80, T2 0b10); the formats q4..q6 have none."""
    fmt = GROUPED_FORMATS[fmt_name]
    if not fmt.illegal_codes:
        return {}
    flags = np.zeros(u2.shape, dtype=bool)
    for code in fmt.illegal_codes:
        flags |= u2 == np.uint8(code % (1 << fmt.code_bits))
    flags[:, p.k :] = False
    per_byte = 8 // base_width(fmt_name)
    return byte_findings(flags, p.base_offset, p.base_row_stride, 0, per_byte, CODE_DOMAIN)


def scale_findings(fmt_name: str, p: RowSplitPlanes, u: np.ndarray, s: np.ndarray) -> dict:
    """Scale validity, the zero-scale rule and zero scales of wholly-padding groups."""
    g_size = ROW_SPLIT_GEOMETRY[fmt_name].group_size
    lg = p.logical_groups
    logical = s[:, :lg]
    invalid = ((logical >> 15) != 0) | (((logical >> 10) & 0x1F) == 0x1F)
    found = group_findings(invalid, p, 0, SCALE_INVALID)
    zero_rows, zero_groups = np.nonzero(logical == 0)
    if zero_rows.size:
        lanes = u[zero_rows, zero_groups]  # [M, G]
        lane_k = zero_groups[:, None] * g_size + np.arange(g_size)
        nonzero = ((lanes != 0) & (lane_k < p.k)).any(axis=1)
        broken = np.zeros(logical.shape, dtype=bool)
        broken[zero_rows[nonzero], zero_groups[nonzero]] = True
        found |= group_findings(broken, p, 0, ZERO_SCALE_NONZERO_CODE)
    found |= group_findings(s[:, lg:] != 0, p, lg, PADDING_SCALE_NONZERO)
    return found


def gap_findings(buf: np.ndarray, p: RowSplitPlanes) -> dict:
    """Non-zero bytes between the planes."""
    found = {}
    for lo, end in ((p.base_bytes, p.high_offset), (p.high_offset + p.high_bytes, p.scale_offset)):
        for at in (np.flatnonzero(buf[lo:end]) + lo).tolist():
            found[(at, GAP_NONZERO)] = "gap"
    return found


def unpacked(
    fmt_name: str, payload: bytes, shape: Sequence[int]
) -> tuple[RowSplitPlanes, np.ndarray, np.ndarray, np.ndarray]:
    """Shape and length checked: (planes, bytes, lane words u `[N, gpr, G]`, scales `[N, gpr]`)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_split_planes(fmt_name, shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    return p, buf, lane_words(fmt_name, *planes(fmt_name, buf, p)), scale_words(buf, p)


def violations(
    fmt_name: str, p: RowSplitPlanes, buf: np.ndarray, u: np.ndarray, s: np.ndarray
) -> list[Violation]:
    """Every finding as a Violation, in ref's order (offset, then rule)."""
    u2 = u.reshape(p.n, p.k_pad)
    found = padding_findings(fmt_name, p, u2)
    found |= code_domain_findings(fmt_name, p, u2)
    found |= scale_findings(fmt_name, p, u, s)
    found |= gap_findings(buf, p)
    return sorted_violations(
        Violation(rule(LAYOUT, name), name.replace("_", " "), offset=at, path=path)
        for (at, name), path in found.items()
    )


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every violated rule, one record per (byte, rule), in payload order (ref.validate)."""
    return violations(fmt_name, *unpacked(fmt_name, payload, shape))


def check_words(fmt_name: str, p: RowSplitPlanes, codes: np.ndarray, scales: np.ndarray) -> None:
    """Same checks, same order, as ref.check_words."""
    bits = GROUPED_FORMATS[fmt_name].code_bits
    if codes.dtype.kind not in "iu" or codes.shape != (p.n, p.k):
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be integers [N, K]", path="codes")
    if scales.dtype.kind not in "iu" or scales.shape != (p.n, p.logical_groups):
        raise InvalidError(
            rule(LAYOUT, WORDS), "scales must be integers [N, ceil(K/G)]", path="scales"
        )
    # int() of the extremes compares exactly whatever the integer dtype (no wrap-around)
    if int(codes.min()) < -(1 << (bits - 1)) or int(codes.max()) > (1 << (bits - 1)) - 1:
        raise InvalidError(rule(LAYOUT, WORDS), "code outside the code width", path="codes")
    if int(scales.min()) < 0 or int(scales.max()) > 0xFFFF:
        raise InvalidError(rule(LAYOUT, WORDS), "scale is not a 16-bit word", path="scales")


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Pack logical `codes` [N, K] and `scales` [N, ceil(K/G)]; the result must validate."""
    shape = require_shape(LAYOUT, shape)
    p = row_split_planes(fmt_name, shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    check_words(fmt_name, p, codes, scales)
    payload = pack(fmt_name, codes, scales.astype(np.uint16), p)
    raise_first(validate(fmt_name, payload, shape))
    return payload


def encode(
    fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = GROUPED_ABSMAX
) -> bytes:
    """Quantise with `grouped_absmax` (spec/ninfer3.md §grouped-absmax) and pack (spec/ninfer3.md
    §row-split), as ref.encode."""
    shape = require_shape(LAYOUT, shape)
    if encoder != GROUPED_ABSMAX or fmt_name == "t2_g128_fp16":
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape)
    codes, scales = grouped_absmax.encode_matrix(GROUPED_FORMATS[fmt_name], values)
    return pack(fmt_name, codes, scales, row_split_planes(fmt_name, shape))


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Logical codes int8 `[N, K]` and scale words uint16 `[N, ceil(K/G)]`; no rule is checked."""
    p, _, u, s = unpacked(fmt_name, payload, shape)
    table = code_table(GROUPED_FORMATS[fmt_name].code_bits, np.int8)
    codes = table[u.reshape(p.n, p.k_pad)[:, : p.k]]
    return {"codes": codes, "scales": s[:, : p.logical_groups].copy()}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `w = f32(s32 × q)` (spec/ninfer3.md §grouped-formats), as
    ref.decode."""
    p, buf, u, s = unpacked(fmt_name, payload, shape)
    raise_first(violations(fmt_name, p, buf, u, s))
    q32 = code_table(GROUPED_FORMATS[fmt_name].code_bits, np.float32)[u]  # exact small integers
    s32 = s.view(np.float16).astype(np.float32)  # exact widening
    w = q32 * s32[:, :, None]  # one correctly rounded binary32 multiply per lane
    return np.ascontiguousarray(w.reshape(p.n, p.k_pad)[:, : p.k])


def row_slice(fmt_name: str, payload: bytes, shape: Sequence[int], rows: Sequence[int]) -> bytes:
    """A standalone `[len(rows), K]` payload: row spans concatenated per plane
    (spec/ninfer3.md §row-split)."""
    shape = require_shape(LAYOUT, shape)
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
