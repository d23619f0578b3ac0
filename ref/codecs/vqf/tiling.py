"""Every tiled VQF layout as one codec: a base codec seen through the row-group interleave.

The layouts are the rows of spec/codecs/vqf/layouts.TILED (spec/vqf.md §g256, §q8-tiled, §q4-0,
§q4-8x8l). A [R x C] legacy payload is R rows of nb = C/32 blocks. Tiling regroups G consecutive
rows: group blocks are stored group by group, block column b in order inside a group, and each group
block holds the G row scales (row m at 2m) followed by the G rows' payload bytes, row m's byte j at
`TileGeometry.payload_position(m, j)` and XORed with the layout's mask (0x88 for Q4, none for Q8).
The total size never changes (spec/vqf.md §size-function). `tile` and `untile` move one byte at a
time by that formula; `TiledCodec` gives a layout the four functions of a codec module (encode,
decode, decode_words, validate) by running its base codec on the untiled bytes.
"""

from __future__ import annotations

from dataclasses import replace
from importlib import import_module
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
    out = bytearray(len(legacy))  # same size (spec/vqf.md §size-function)
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


class CodecModule(Protocol):
    """What every codec offers: a codec module of this package, or a `TiledCodec`."""

    NAME: str

    def encode(self, values: object, rows: int, cols: int, *, mode: str = ...) -> bytes: ...
    def decode(self, payload: bytes, rows: int, cols: int) -> np.ndarray: ...
    def decode_words(self, payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]: ...
    def validate(self, payload: bytes, rows: int, cols: int) -> list[Violation]: ...


class TiledCodec:
    """A tiled layout with a codec module's functions: its base codec on the untiled bytes."""

    #: The package whose untiled codec modules a layout's `base` names. Kept a name, resolved
    #: lazily: fast's subclass reuses this class by naming its own package, so the string never
    #: leaves one codec package (ref -> ref, fast -> fast), and only the base asked for is loaded.
    PACKAGE = "weightfile.ref.codecs.vqf"

    def __init__(self, name: str) -> None:
        self.NAME = name
        self.base: CodecModule = import_module(f"{self.PACKAGE}.{CODECS[name].base}")

    def tile(self, legacy: bytes, rows: int, cols: int) -> bytes:
        """The base payload rearranged into this layout (the permutation of this module)."""
        return tile(self.NAME, legacy, rows, cols)

    def untile(self, tiled: bytes, rows: int, cols: int) -> bytes:
        """Undo `tile`."""
        return untile(self.NAME, tiled, rows, cols)

    def legacy_payload(self, payload: bytes, rows: int, cols: int) -> bytes:
        """The untiled payload of a shape- and length-checked tiled payload."""
        return self.untile(require_payload(self.NAME, payload, rows, cols), rows, cols)

    def encode(self, values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
        """Quantise with the base codec in `mode`, then tile: how the writer repacks
        (spec/vqf.md §g256, §q8-tiled, §q4-0, §q4-8x8l)."""
        require_shape(self.NAME, rows, cols)
        require_mode(self.NAME, mode)
        return self.tile(self.base.encode(values, rows, cols, mode=mode), rows, cols)

    def decode_words(self, payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
        """The logical (untiled) words, as the base codec's decode_words gives them."""
        return self.base.decode_words(self.legacy_payload(payload, rows, cols), rows, cols)

    def decode(self, payload: bytes, rows: int, cols: int) -> np.ndarray:
        """Float32 [rows, cols] in plain row-major order."""
        return self.base.decode(self.legacy_payload(payload, rows, cols), rows, cols)

    def validate(self, payload: bytes, rows: int, cols: int) -> list[Violation]:
        """The base codec's rules on the untiled payload, renamed to this layout, offsets tiled."""
        found = validate_length(self.NAME, payload, rows, cols)
        if found:
            return found
        prefix = rule(self.base.NAME, "")
        return [
            replace(
                v,
                rule=rule(self.NAME, v.rule.removeprefix(prefix)),
                offset=None if v.offset is None else tiled_offset(self.NAME, cols, v.offset),
            )
            for v in self.base.validate(self.untile(bytes(payload), rows, cols), rows, cols)
        ]

    def __repr__(self) -> str:
        return f"<tiled codec {self.NAME!r} of {self.base.NAME!r} from {self.PACKAGE}>"
