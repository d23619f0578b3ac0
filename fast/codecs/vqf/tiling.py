"""Vectorised row-group interleave (§5.6-§5.8); must equal ref/codecs/vqf/tiling.py byte for byte.

The legacy payload viewed as [R/G, G, nb, 2 + P] (group, row in group, block, byte) is transposed
into [R/G, nb, G, 2] scales followed by [R/G, nb, P/k, G, k] chunks: the address formula of §5.6
written as an axis permutation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np

from weightfile.fast.codecs.vqf.common import require_payload
from weightfile.ref.codecs.vqf.common import require_mode, require_shape, validate_length
from weightfile.ref.codecs.vqf.tiling import geometry, tiled_offset
from weightfile.spec.codecs.vqf.registry import rule
from weightfile.spec.errors import Violation


def _axes(name: str, rows: int, cols: int) -> tuple[int, int, int, int, int]:
    t = geometry(name)
    return rows // t.group_rows, t.group_rows, cols // 32, t.block_payload_bytes, t.chunk_bytes


def tile(name: str, legacy: bytes, rows: int, cols: int) -> bytes:
    """Rearrange a legacy payload into the tiled layout (XOR applied to payload bytes)."""
    ng, g, nb, p, k = _axes(name, rows, cols)
    src = np.frombuffer(legacy, dtype=np.uint8).reshape(ng, g, nb, 2 + p)
    out = np.empty((ng, nb, g * (2 + p)), dtype=np.uint8)
    out[..., : 2 * g] = src[..., :2].transpose(0, 2, 1, 3).reshape(ng, nb, 2 * g)
    chunks = src[..., 2:].reshape(ng, g, nb, p // k, k).transpose(0, 2, 3, 1, 4)
    out[..., 2 * g :] = chunks.reshape(ng, nb, g * p) ^ np.uint8(geometry(name).xor)
    return out.tobytes()


def untile(name: str, tiled: bytes, rows: int, cols: int) -> bytes:
    """Undo `tile`."""
    ng, g, nb, p, k = _axes(name, rows, cols)
    src = np.frombuffer(tiled, dtype=np.uint8).reshape(ng, nb, g * (2 + p))
    out = np.empty((ng, g, nb, 2 + p), dtype=np.uint8)
    out[..., :2] = src[..., : 2 * g].reshape(ng, nb, g, 2).transpose(0, 2, 1, 3)
    chunks = src[..., 2 * g :].reshape(ng, nb, p // k, g, k) ^ np.uint8(geometry(name).xor)
    out[..., 2:] = chunks.transpose(0, 3, 1, 2, 4).reshape(ng, g, nb, p)
    return out.tobytes()


class Base(Protocol):
    """The untiled fast codec module a tiled layout rearranges."""

    NAME: str

    def encode(self, values: object, rows: int, cols: int, *, mode: str = ...) -> bytes: ...
    def validate(self, payload: bytes, rows: int, cols: int) -> list[Violation]: ...


def encode(name: str, base: Base, values: object, rows: int, cols: int, mode: str) -> bytes:
    """Quantise with the base codec, then tile (ref: tiling.encode)."""
    require_shape(name, rows, cols)
    require_mode(name, mode)
    return tile(name, base.encode(values, rows, cols, mode=mode), rows, cols)


def legacy_payload(name: str, payload: bytes, rows: int, cols: int) -> bytes:
    """The untiled payload of a shape- and length-checked tiled payload."""
    return untile(name, require_payload(name, payload, rows, cols), rows, cols)


def validate(name: str, base: Base, payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The base rules on the untiled payload, renamed, offsets tiled (ref: tiling.validate)."""
    found = validate_length(name, payload, rows, cols)
    if found:
        return found
    prefix = rule(base.NAME, "")
    return [
        replace(
            v,
            rule=rule(name, v.rule.removeprefix(prefix)),
            offset=None if v.offset is None else tiled_offset(name, cols, v.offset),
        )
        for v in base.validate(untile(name, bytes(payload), rows, cols), rows, cols)
    ]
