"""`row_split_k128_v1`: q4/q5/q6/q8/t2 codes in base and high planes, then scales
(spec/ninfer3.md §row-split).

Public functions take the format name first; `codec.get_codec` binds it. Each step is one function
following the spec/ninfer3.md §row-split words: where a lane's base field sits, where its high bits
sit, the zero padding, and the exact reconstruction `w = f32(s32 × q)` of spec/ninfer3.md
§grouped-formats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.codecs.ninfer3 import grouped_absmax
from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    require_values,
    sorted_violations,
)
from weightfile.ref.codecs.ninfer3.scalars import (
    f16_scale_is_valid,
    f16_value,
    f32,
    f32_bits,
    twos_complement,
)
from weightfile.spec.codecs.ninfer3.formats import GROUPED_FORMATS, GroupedFormat
from weightfile.spec.codecs.ninfer3.layouts import (
    ROW_SPLIT_GEOMETRY,
    ROW_SPLIT_K128_V1,
    RowSplitPlanes,
    RowView,
    row_split_planes,
    row_split_row_view,
)
from weightfile.spec.codecs.ninfer3.registry import (
    CODE_DOMAIN,
    GAP_NONZERO,
    GROUPED_ABSMAX,
    NO_ENCODER,
    PADDING_NONZERO,
    PADDING_SCALE_NONZERO,
    ROWS,
    SCALE_INVALID,
    WORDS,
    ZERO_SCALE_NONZERO_CODE,
    rule,
)
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = ROW_SPLIT_K128_V1

# --- where a lane's bits live (spec/ninfer3.md §row-split Base plane, High plane)
# -------------------------------------


def base_field_position(fmt_name: str, p: RowSplitPlanes, n: int, k: int) -> tuple[int, int, int]:
    """(byte offset, bit shift, bit width) of lane k's base field in row n (spec/ninfer3.md
    §row-split Base plane)."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    g, i = divmod(k, geo.group_size)
    group_start = p.base_offset + (n * p.gpr + g) * geo.base_bytes_per_group
    if geo.code_bits == 8:  # Q8: one byte per lane
        return group_start + i, 0, 8
    if geo.code_bits == 2:  # T2: four lanes per byte, lowest lane in bits 1..0
        return group_start + i // 4, 2 * (i % 4), 2
    return group_start + i // 2, 4 * (i % 2), 4  # Q4/Q5/Q6: even lane low nibble, odd lane high


def high_field_position(fmt_name: str, p: RowSplitPlanes, n: int, k: int) -> tuple[int, int, int]:
    """(byte offset, bit shift, bit width) of lane k's bits above bit 3 (spec/ninfer3.md §row-split
    High plane).

    Stream bit t = i·(b−4) + j holds bit 4+j of lane i and goes to byte ⌊t/8⌋, bit t mod 8.
    A lane's (b−4) bits never straddle a byte for b = 5 or 6.
    """
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    g, i = divmod(k, geo.group_size)
    width = geo.code_bits - 4
    group_start = p.high_offset + (n * p.gpr + g) * geo.high_bytes_per_group
    t = i * width
    return group_start + t // 8, t % 8, width


def scale_position(p: RowSplitPlanes, n: int, g: int) -> int:
    """Byte offset of the LE binary16 scale of physical group g of row n (`row·gpr + g`)."""
    return p.scale_offset + 2 * (n * p.gpr + g)


def scale_positions(p: RowSplitPlanes, n: int) -> list[int]:
    """Scale offsets of the logical groups of row n."""
    return [scale_position(p, n, g) for g in range(p.logical_groups)]


def has_high_plane(fmt_name: str) -> bool:
    """Q5 and Q6 keep bits 4.. in a separate high plane."""
    return ROW_SPLIT_GEOMETRY[fmt_name].high_bytes_per_group > 0


# --- packing words into bytes -------------------------------------------------------------------


def put_field(buf: bytearray, position: tuple[int, int, int], value: int) -> None:
    """OR a field's bits into the buffer at (byte, shift, width)."""
    offset, shift, width = position
    buf[offset] |= (value & ((1 << width) - 1)) << shift


def get_field(payload: bytes, position: tuple[int, int, int]) -> int:
    """Read a field's bits from (byte, shift, width)."""
    offset, shift, width = position
    return (payload[offset] >> shift) & ((1 << width) - 1)


def lane_word(fmt_name: str, payload: bytes, p: RowSplitPlanes, n: int, k: int) -> int:
    """u = base field | high bits << 4, the unsigned code word of lane k of row n."""
    u = get_field(payload, base_field_position(fmt_name, p, n, k))
    if has_high_plane(fmt_name):
        u |= get_field(payload, high_field_position(fmt_name, p, n, k)) << 4
    return u


def check_words(
    fmt: GroupedFormat, p: RowSplitPlanes, codes: np.ndarray, scales: np.ndarray
) -> None:
    """Integer codes `[N, K]` that fit b bits two's complement; 16-bit scales `[N, groups]`."""
    lo, hi = -(1 << (fmt.code_bits - 1)), (1 << (fmt.code_bits - 1)) - 1
    if codes.dtype.kind not in "iu" or codes.shape != (p.n, p.k):
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be integers [N, K]", path="codes")
    if scales.dtype.kind not in "iu" or scales.shape != (p.n, p.logical_groups):
        raise InvalidError(
            rule(LAYOUT, WORDS), "scales must be integers [N, ceil(K/G)]", path="scales"
        )
    if any(not lo <= q <= hi for row in codes.tolist() for q in row):
        raise InvalidError(rule(LAYOUT, WORDS), "code outside the code width", path="codes")
    if any(not 0 <= s <= 0xFFFF for row in scales.tolist() for s in row):
        raise InvalidError(rule(LAYOUT, WORDS), "scale is not a 16-bit word", path="scales")


def pack(
    fmt_name: str, codes: list[list[int]], scales: list[list[int]], p: RowSplitPlanes
) -> bytes:
    """Lay logical codes and scales out as spec/ninfer3.md §row-split says; padding lanes, groups
    and gaps stay zero."""
    fmt = GROUPED_FORMATS[fmt_name]
    buf = bytearray(p.bytes)  # [bytes]; zero-filled, so padding and gaps need no writes
    for n in range(p.n):
        for k in range(p.k):
            u = codes[n][k] % (1 << fmt.code_bits)  # u = q mod 2^b
            put_field(buf, base_field_position(fmt_name, p, n, k), u)
            if has_high_plane(fmt_name):
                put_field(buf, high_field_position(fmt_name, p, n, k), u >> 4)
        for g in range(p.logical_groups):
            at = scale_position(p, n, g)
            buf[at : at + 2] = scales[n][g].to_bytes(2, "little")
    return bytes(buf)


# --- strict validation (spec/ninfer3.md §grouped-formats Strict-validator checks,
# spec/ninfer3.md §row-split Padding) ----------------------------


def lane_violations(fmt_name: str, payload: bytes, p: RowSplitPlanes, n: int, k: int) -> list:
    """Code-domain and padding findings for one lane, at the bytes holding its bits."""
    fmt = GROUPED_FORMATS[fmt_name]
    base = base_field_position(fmt_name, p, n, k)
    found = []
    if k >= p.k:  # a padding lane: every one of its bits must be zero
        if get_field(payload, base):
            found.append((base[0], PADDING_NONZERO))
        if has_high_plane(fmt_name):
            high = high_field_position(fmt_name, p, n, k)
            if get_field(payload, high):
                found.append((high[0], PADDING_NONZERO))
    elif twos_complement(lane_word(fmt_name, payload, p, n, k), fmt.code_bits) in fmt.illegal_codes:
        found.append((base[0], CODE_DOMAIN))
    return found


def group_violations(fmt_name: str, payload: bytes, p: RowSplitPlanes, n: int, g: int) -> list:
    """Scale validity, the zero-scale rule and the padding-group scale for one group."""
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    at = scale_position(p, n, g)
    scale = int.from_bytes(payload[at : at + 2], "little")
    if g >= p.logical_groups:
        return [(at, PADDING_SCALE_NONZERO)] if scale != 0x0000 else []
    if not f16_scale_is_valid(scale):
        return [(at, SCALE_INVALID)]
    lanes = range(g * geo.group_size, min((g + 1) * geo.group_size, p.k))
    if scale == 0x0000 and any(lane_word(fmt_name, payload, p, n, k) for k in lanes):
        return [(at, ZERO_SCALE_NONZERO_CODE)]
    return []


def gap_violations(payload: bytes, p: RowSplitPlanes) -> list:
    """Every byte between the planes is zero."""
    gaps = [range(p.base_bytes, p.high_offset), range(p.high_offset + p.high_bytes, p.scale_offset)]
    return [(at, GAP_NONZERO) for gap in gaps for at in gap if payload[at] != 0]


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Every violated rule, one record per (byte, rule), in payload order (spec/ninfer3.md
    §grouped-formats, §row-split)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_split_planes(fmt_name, shape)
    geo = ROW_SPLIT_GEOMETRY[fmt_name]
    found: dict[tuple[int, str], str] = {}  # (offset, rule) -> path of its first lane or group
    for n in range(p.n):
        for g in range(p.gpr):
            for at, name in group_violations(fmt_name, payload, p, n, g):
                found.setdefault((at, name), f"scales[{n}][{g}]")
            for k in range(g * geo.group_size, (g + 1) * geo.group_size):
                for at, name in lane_violations(fmt_name, payload, p, n, k):
                    found.setdefault((at, name), f"codes[{n}][{k}]")
    for at, name in gap_violations(payload, p):
        found.setdefault((at, name), "gap")
    return sorted_violations(
        Violation(rule(LAYOUT, name), name.replace("_", " "), offset=at, path=path)
        for (at, name), path in found.items()
    )


# --- the public surface -------------------------------------------------------------------------


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Pack logical `codes` [N, K] and `scales` [N, ceil(K/G)]; the result must validate."""
    shape = require_shape(LAYOUT, shape)
    p = row_split_planes(fmt_name, shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    check_words(GROUPED_FORMATS[fmt_name], p, codes, scales)
    payload = pack(fmt_name, codes.tolist(), scales.tolist(), p)
    raise_first(validate(fmt_name, payload, shape))
    return payload


def encode(
    fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = GROUPED_ABSMAX
) -> bytes:
    """Quantise binary32 values `[N, K]` with `grouped_absmax` (spec/ninfer3.md §grouped-absmax) and
    pack them (spec/ninfer3.md §row-split)."""
    shape = require_shape(LAYOUT, shape)
    if encoder != GROUPED_ABSMAX or fmt_name == "t2_g128_fp16":  # Q7: t2 is import-only
        raise UnsupportedError(rule(LAYOUT, NO_ENCODER), f"no {encoder} encoder for {fmt_name}")
    require_values(LAYOUT, values, shape)
    codes, scales = grouped_absmax.encode_matrix(GROUPED_FORMATS[fmt_name], values)
    return pack(fmt_name, codes.tolist(), scales.tolist(), row_split_planes(fmt_name, shape))


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Logical codes int8 `[N, K]` and scale words uint16 `[N, ceil(K/G)]`; no rule is checked."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = row_split_planes(fmt_name, shape)
    bits = GROUPED_FORMATS[fmt_name].code_bits
    codes = [
        [twos_complement(lane_word(fmt_name, payload, p, n, k), bits) for k in range(p.k)]
        for n in range(p.n)
    ]
    scales = [
        [int.from_bytes(payload[at : at + 2], "little") for at in scale_positions(p, n)]
        for n in range(p.n)
    ]
    return {
        "codes": np.array(codes, dtype=np.int8).reshape(shape),
        "scales": np.array(scales, dtype=np.uint16).reshape(p.n, p.logical_groups),
    }


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `w = f32(f16_value(scale) × q)` per lane (spec/ninfer3.md
    §grouped-formats reconstruction)."""
    shape = require_shape(LAYOUT, shape)
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    g_size = ROW_SPLIT_GEOMETRY[fmt_name].group_size
    scales, codes = words["scales"].tolist(), words["codes"].tolist()
    out = [
        [f32_bits(f32(f16_value(scales[n][k // g_size]) * q)) for k, q in enumerate(row)]
        for n, row in enumerate(codes)
    ]  # [N][K] binary32 words
    return np.array(out, dtype=np.uint32).view(np.float32).reshape(shape)


def require_rows(shape: tuple[int, ...], rows: Sequence[int]) -> None:
    """A view or slice selects at least one row, every one inside `[0, N)`."""
    if not rows or any(not 0 <= r < shape[0] for r in rows):
        raise InvalidError(rule(LAYOUT, ROWS), "rows must be non-empty and inside [0, N)")


def row_view(fmt_name: str, shape: Sequence[int], start: int, count: int) -> RowView:
    """The three parent spans of rows `[start, start + count)` (spec/ninfer3.md §row-split Row
    views)."""
    shape = require_shape(LAYOUT, shape)
    require_rows(shape, range(start, start + count))
    return row_split_row_view(fmt_name, shape, start, count)


def row_slice(fmt_name: str, payload: bytes, shape: Sequence[int], rows: Sequence[int]) -> bytes:
    """A standalone `[len(rows), K]` payload: row spans concatenated per plane
    (spec/ninfer3.md §row-split)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    require_rows(shape, rows)
    views = [row_split_row_view(fmt_name, shape, r, 1) for r in rows]
    child = row_split_planes(fmt_name, (len(rows), shape[1]))
    buf = bytearray(child.bytes)  # [bytes]; gaps stay zero
    for i, view in enumerate(views):
        for span, offset, stride in (
            (view.base, child.base_offset, child.base_row_stride),
            (view.high, child.high_offset, child.high_row_stride),
            (view.scale, child.scale_offset, child.scale_row_stride),
        ):
            at = offset + i * stride
            buf[at : at + span.length] = payload[span.offset : span.offset + span.length]
    return bytes(buf)
