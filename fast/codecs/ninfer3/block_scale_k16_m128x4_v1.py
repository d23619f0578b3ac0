"""Vectorised `block_scale_k16_m128x4_v1` (spec/ninfer3.md §block-scale); equals
`ref.codecs.ninfer3.block_scale_k16_m128x4_v1`.

The swizzle is the spec/ninfer3.md §block-scale permutation: natural `[N, K/16]` viewed as
`[N/128, 4, 32, K/64, 4]`, axes (0, 3, 2, 1, 4), flattened.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast.codecs.ninfer3.row_scale_v1 import E4M3FN_TABLE
from weightfile.ref.codecs.ninfer3.block_scale_k16_m128x4_v1 import BLOCK, check_words, encode
from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    sorted_violations,
)
from weightfile.spec.codecs.ninfer3.formats import E2M1_MAGNITUDES
from weightfile.spec.codecs.ninfer3.layouts import (
    BLOCK_SCALE_K16_M128X4_V1,
    BlockScalePlanes,
    block_scale_planes,
)
from weightfile.spec.codecs.ninfer3.registry import (
    DIVISOR_INVALID,
    GAP_NONZERO,
    SCALE_INVALID,
    rule,
)
from weightfile.spec.errors import Violation

LAYOUT = BLOCK_SCALE_K16_M128X4_V1
# `encode` is ref's refusal: nvfp4 has no quantiser, so there is nothing to vectorise.
__all__ = ["decode", "decode_words", "encode", "encode_words", "validate"]

E2M1_TABLE = np.array(list(E2M1_MAGNITUDES) + [-m for m in E2M1_MAGNITUDES], dtype=np.float32)


def swizzle(natural: np.ndarray, p: BlockScalePlanes) -> np.ndarray:
    """Natural `[N, K/16]` scales -> the scale plane's byte order."""
    tiled = natural.reshape(p.n // 128, 4, 32, p.k // 64, 4)
    return tiled.transpose(0, 3, 2, 1, 4).ravel()


def unswizzle(plane: np.ndarray, p: BlockScalePlanes) -> np.ndarray:
    """The scale plane -> natural `[N, K/16]` scales."""
    tiled = plane.reshape(p.n // 128, p.k // 64, 32, 4, 4)
    return tiled.transpose(0, 3, 2, 1, 4).reshape(p.n, p.k // BLOCK)


def scale_offsets(p: BlockScalePlanes) -> np.ndarray:
    """Payload offset of every natural scale `[N, K/16]`."""
    index = np.arange(p.scale_plane_bytes, dtype=np.int64)
    return unswizzle(index, p) + p.scale_plane_offset


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Invalid block scales, divisor and gap bytes, in payload order (ref.validate)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = block_scale_planes(shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    natural = unswizzle(buf[p.scale_plane_offset : p.weight_divisor_offset], p)
    bad_n, bad_g = np.nonzero(((natural & 0x80) != 0) | (natural == 0x7F))
    offsets = scale_offsets(p)
    found = [
        Violation(
            rule(LAYOUT, SCALE_INVALID), "scale invalid", int(offsets[n, g]), f"scales[{n}][{g}]"
        )
        for n, g in zip(bad_n.tolist(), bad_g.tolist(), strict=True)
    ]
    d = int(buf[p.weight_divisor_offset :].view("<u4")[0])
    if d >> 31 or (d >> 23) & 0xFF == 0xFF or d == 0:
        at = p.weight_divisor_offset
        found.append(Violation(rule(LAYOUT, DIVISOR_INVALID), "divisor invalid", at, "divisor"))
    gap = buf[p.code_plane_bytes : p.scale_plane_offset]
    for at in (np.flatnonzero(gap) + p.code_plane_bytes).tolist():
        found.append(Violation(rule(LAYOUT, GAP_NONZERO), "gap nonzero", at, "gap"))
    return sorted_violations(found)


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Import codes, natural scales and the divisor word; must validate (ref.encode_words)."""
    shape = require_shape(LAYOUT, shape)
    p = block_scale_planes(shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    divisor = np.asarray(words.get("divisor"))
    check_words(p, codes, scales, divisor)
    buf = np.zeros(p.bytes, dtype=np.uint8)
    pairs = codes.reshape(-1, 2)
    buf[: p.code_plane_bytes] = pairs[:, 0] | (pairs[:, 1] << np.uint8(4))
    buf[p.scale_plane_offset : p.weight_divisor_offset] = swizzle(scales, p)
    buf[p.weight_divisor_offset :] = divisor.astype("<u4").reshape(1).view(np.uint8)
    payload = buf.tobytes()
    raise_first(validate(fmt_name, payload, shape))
    return payload


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Codes `[N, K]`, natural scales `[N, K/16]`, divisor word `()` (ref.decode_words)."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = block_scale_planes(shape)
    buf = np.frombuffer(payload, dtype=np.uint8)
    packed = buf[: p.code_plane_bytes]
    codes = np.stack([packed & 0xF, packed >> 4], axis=1).reshape(shape)
    natural = unswizzle(buf[p.scale_plane_offset : p.weight_divisor_offset], p).copy()
    divisor = np.array(buf[p.weight_divisor_offset :].view("<u4")[0], dtype=np.uint32)
    return {"codes": codes, "scales": natural, "divisor": divisor}


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `W = f32(f32(e2m1 × e4m3fn) / d_w)` (ref.decode)."""
    shape = require_shape(LAYOUT, shape)
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    d_w = words["divisor"].view(np.float32)
    s = np.repeat(E4M3FN_TABLE[words["scales"]], BLOCK, axis=1)
    with np.errstate(over="ignore"):
        return (E2M1_TABLE[words["codes"]] * s) / d_w
