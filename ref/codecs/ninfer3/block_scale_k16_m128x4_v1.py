"""`block_scale_k16_m128x4_v1`: nvfp4 E2M1 codes, swizzled E4M3FN block scales and one FP32
divisor (spec/ninfer3.md §nvfp4, §block-scale).

There is no built-in FP→NVFP4 quantiser (spec/ninfer3.md §nvfp4): `encode` refuses, and
`encode_words` imports already-encoded codes, natural-order scales and the divisor word verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.codecs.ninfer3.checks import (
    raise_first,
    require_length,
    require_shape,
    sorted_violations,
)
from weightfile.ref.codecs.ninfer3.scalars import (
    e2m1_value,
    e4m3fn_scale_is_valid,
    e4m3fn_value,
    f32,
    f32_bits,
    f32_from_bits,
)
from weightfile.spec.codecs.ninfer3.layouts import (
    BLOCK_SCALE_K16_M128X4_V1,
    BlockScalePlanes,
    block_scale_planes,
    nvfp4_scale_index,
)
from weightfile.spec.codecs.ninfer3.registry import (
    DIVISOR_INVALID,
    GAP_NONZERO,
    NO_ENCODER,
    SCALE_INVALID,
    WORDS,
    rule,
)
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation

LAYOUT = BLOCK_SCALE_K16_M128X4_V1
BLOCK = 16  # lanes along K per E4M3FN scale


def code_position(p: BlockScalePlanes, n: int, k: int) -> tuple[int, int]:
    """(byte, shift) of code [n, k]: row-major, even k in the low nibble, k+1 in the high one."""
    return (n * p.k + k) // 2, 4 * (k % 2)


def scale_position(p: BlockScalePlanes, n: int, g: int) -> int:
    """Payload offset of natural scale s[n, g] under the spec/ninfer3.md §block-scale swizzle."""
    return p.scale_plane_offset + nvfp4_scale_index(n, g, p.k)


def divisor_is_valid(word: int) -> bool:
    """d_w is one FP32 word, finite and > 0; positive subnormals are allowed
    (spec/ninfer3.md §nvfp4)."""
    return word >> 31 == 0 and (word >> 23) & 0xFF != 0xFF and word != 0


def read_divisor(payload: bytes, p: BlockScalePlanes) -> int:
    """The LE FP32 divisor word at weight_divisor_offset."""
    return int.from_bytes(payload[p.weight_divisor_offset : p.weight_divisor_offset + 4], "little")


def validate(fmt_name: str, payload: bytes, shape: Sequence[int]) -> list[Violation]:
    """Invalid block scales, an invalid divisor and non-zero gap bytes, in payload order."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = block_scale_planes(shape)
    found = []
    for n in range(p.n):
        for g in range(p.k // BLOCK):
            at = scale_position(p, n, g)
            if not e4m3fn_scale_is_valid(payload[at]):
                found.append(
                    Violation(rule(LAYOUT, SCALE_INVALID), "scale invalid", at, f"scales[{n}][{g}]")
                )
    if not divisor_is_valid(read_divisor(payload, p)):
        at = p.weight_divisor_offset
        found.append(Violation(rule(LAYOUT, DIVISOR_INVALID), "divisor invalid", at, "divisor"))
    for at in range(p.code_plane_bytes, p.scale_plane_offset):
        if payload[at] != 0:
            found.append(Violation(rule(LAYOUT, GAP_NONZERO), "gap nonzero", at, "gap"))
    return sorted_violations(found)


def pack(
    codes: list[list[int]], scales: list[list[int]], divisor: int, p: BlockScalePlanes
) -> bytes:
    """Codes two per byte, scales through the swizzle, then the divisor word
    (spec/ninfer3.md §block-scale)."""
    buf = bytearray(p.bytes)  # [bytes]; the gap stays zero
    for n in range(p.n):
        for k in range(p.k):
            at, shift = code_position(p, n, k)
            buf[at] |= codes[n][k] << shift
        for g in range(p.k // BLOCK):
            buf[scale_position(p, n, g)] = scales[n][g]
    buf[p.weight_divisor_offset :] = divisor.to_bytes(4, "little")
    return bytes(buf)


def check_words(
    p: BlockScalePlanes, codes: np.ndarray, scales: np.ndarray, divisor: np.ndarray
) -> None:
    """Codes are 4-bit `[N, K]`, scales bytes `[N, K/16]`, the divisor one 32-bit word."""
    if codes.shape != (p.n, p.k) or codes.dtype != np.uint8 or (codes > 0xF).any():
        raise InvalidError(rule(LAYOUT, WORDS), "codes must be uint8 0..15 [N, K]", path="codes")
    if scales.shape != (p.n, p.k // BLOCK) or scales.dtype != np.uint8:
        raise InvalidError(rule(LAYOUT, WORDS), "scales must be uint8 [N, K/16]", path="scales")
    if divisor.shape != () or divisor.dtype != np.uint32:
        raise InvalidError(rule(LAYOUT, WORDS), "divisor must be one uint32 word", path="divisor")


def encode_words(fmt_name: str, words: dict[str, np.ndarray], shape: Sequence[int]) -> bytes:
    """Import `codes` [N, K], natural `scales` [N, K/16] and the `divisor` word; must validate."""
    shape = require_shape(LAYOUT, shape)
    p = block_scale_planes(shape)
    codes, scales = np.asarray(words.get("codes")), np.asarray(words.get("scales"))
    divisor = np.asarray(words.get("divisor"))
    check_words(p, codes, scales, divisor)
    payload = pack(codes.tolist(), scales.tolist(), int(divisor), p)
    raise_first(validate(fmt_name, payload, shape))
    return payload


def encode(fmt_name: str, values: np.ndarray, shape: Sequence[int], *, encoder: str = "") -> bytes:
    """There is no FP→NVFP4 quantiser (spec/ninfer3.md §nvfp4): import encoded words with
    `encode_words`."""
    raise UnsupportedError(rule(LAYOUT, NO_ENCODER), "nvfp4 has no quantiser; use encode_words")


def decode_words(fmt_name: str, payload: bytes, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """Codes uint8 `[N, K]`, natural scales uint8 `[N, K/16]`, divisor uint32 `()`; no checks."""
    shape = require_shape(LAYOUT, shape)
    require_length(fmt_name, LAYOUT, payload, shape)
    p = block_scale_planes(shape)
    codes = []
    for n in range(p.n):
        row = []
        for k in range(p.k):
            at, shift = code_position(p, n, k)
            row.append((payload[at] >> shift) & 0xF)
        codes.append(row)
    scales = [[payload[scale_position(p, n, g)] for g in range(p.k // BLOCK)] for n in range(p.n)]
    return {
        "codes": np.array(codes, dtype=np.uint8).reshape(shape),
        "scales": np.array(scales, dtype=np.uint8).reshape(p.n, p.k // BLOCK),
        "divisor": np.array(read_divisor(payload, p), dtype=np.uint32),
    }


def decode(fmt_name: str, payload: bytes, shape: Sequence[int]) -> np.ndarray:
    """Validate strictly, then `W = f32(f32(e2m1(c) × e4m3fn(s)) / d_w)` (spec/ninfer3.md
    §nvfp4)."""
    shape = require_shape(LAYOUT, shape)
    raise_first(validate(fmt_name, payload, shape))
    words = decode_words(fmt_name, payload, shape)
    d_w = f32_from_bits(int(words["divisor"]))
    scales = words["scales"].tolist()
    out = [
        [
            f32_bits(f32(f32(e2m1_value(c) * e4m3fn_value(scales[n][k // BLOCK])) / d_w))
            for k, c in enumerate(row)
        ]
        for n, row in enumerate(words["codes"].tolist())
    ]  # [N][K] binary32 words
    return np.array(out, dtype=np.uint32).view(np.float32).reshape(shape)
