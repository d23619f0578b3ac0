"""The row-group interleave that turns legacy blocks into the tiled layouts (vqf.md §5.6-§5.8).

A [R x C] legacy payload is R rows of nb = C/32 blocks. Tiling regroups G consecutive rows: group
blocks are stored group by group, block column b in order inside a group, and each group block holds
the G row scales (row m at 2m) followed by the G rows' payload bytes, row m's byte j at
`TileGeometry.payload_position(m, j)` and XORed with the layout's mask (0x88 for Q4, none for Q8).
The total size never changes (§5.9). These functions move one byte at a time by that formula.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np

from weightfile.ref.codecs.vqf.common import (
    require_mode,
    require_payload,
    require_shape,
    validate_length,
)
from weightfile.spec.codecs.vqf.registry import CODECS, TileGeometry, rule
from weightfile.spec.errors import Violation


def geometry(name: str) -> TileGeometry:
    """The tile geometry of a tiled codec."""
    tiling = CODECS[name].tiling
    assert tiling is not None, f"{name} is not a tiled layout"
    return tiling


def tiled_offset(name: str, cols: int, legacy_offset: int) -> int:
    """Where the byte at `legacy_offset` of the untiled payload sits in the tiled payload."""
    t = geometry(name)
    block_bytes = 2 + t.block_payload_bytes
    nb = cols // 32
    block, within = divmod(legacy_offset, block_bytes)  # legacy block = row · nb + b
    r, b = divmod(block, nb)
    group, m = divmod(r, t.group_rows)
    base = (group * nb + b) * t.group_block_bytes  # (r div G)·nb·GB + (c div 32)·GB
    if within < 2:
        return base + t.scale_position(m) + within
    return base + t.payload_position(m, within - 2)


def tile(name: str, legacy: bytes, rows: int, cols: int) -> bytes:
    """Rearrange a legacy payload into the tiled layout (XOR applied to every payload byte)."""
    t = geometry(name)
    block_bytes = 2 + t.block_payload_bytes
    out = bytearray(len(legacy))  # same size (§5.9)
    for src in range(rows * (cols // 32) * block_bytes):
        mask = t.xor if src % block_bytes >= 2 else 0
        out[tiled_offset(name, cols, src)] = legacy[src] ^ mask
    return bytes(out)


def untile(name: str, tiled: bytes, rows: int, cols: int) -> bytes:
    """Undo `tile`: gather every legacy byte from its tiled position and undo the XOR."""
    t = geometry(name)
    block_bytes = 2 + t.block_payload_bytes
    out = bytearray(len(tiled))
    for dst in range(rows * (cols // 32) * block_bytes):
        mask = t.xor if dst % block_bytes >= 2 else 0
        out[dst] = tiled[tiled_offset(name, cols, dst)] ^ mask
    return bytes(out)


class Base(Protocol):
    """The untiled codec module a tiled layout rearranges."""

    NAME: str

    def encode(self, values: object, rows: int, cols: int, *, mode: str = ...) -> bytes: ...
    def decode(self, payload: bytes, rows: int, cols: int) -> np.ndarray: ...
    def decode_words(self, payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]: ...
    def validate(self, payload: bytes, rows: int, cols: int) -> list[Violation]: ...


def encode(name: str, base: Base, values: object, rows: int, cols: int, mode: str) -> bytes:
    """Quantise with the base codec, then tile (how the writer repacks, §5.5-§5.8)."""
    require_shape(name, rows, cols)
    require_mode(name, mode)
    return tile(name, base.encode(values, rows, cols, mode=mode), rows, cols)


def legacy_payload(name: str, payload: bytes, rows: int, cols: int) -> bytes:
    """The untiled payload of a shape- and length-checked tiled payload."""
    return untile(name, require_payload(name, payload, rows, cols), rows, cols)


def validate(name: str, base: Base, payload: bytes, rows: int, cols: int) -> list[Violation]:
    """The base codec's rules on the untiled payload, renamed to this layout, offsets tiled."""
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
