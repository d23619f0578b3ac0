"""The tiled VQF payload layouts as one table: a row per layout (spec/vqf.md §g256, §q8-tiled,
§q4-0, §q4-8x8l).

A tiled layout never quantises anything itself. The writer quantises with an untiled base codec and
then regroups the base blocks of G consecutive rows (spec/vqf.md §q8-tiled): a [R x C] matrix of nb
= C/32 block columns is stored group by group, block column by block column inside a group, and each
group block holds the G row scales (row m at 2m) followed by the G rows' payload bytes moved in
k-byte chunks, row m's byte j at 2G + (j div k)·kG + km + (j mod k), XORed with the row's mask.
Every layout of spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l is that one rule with its own (G, k, mask),
so a new tiled layout is one row here: the registry, both codec packages, the C kernels' geometry
and the tests read it from this table.

How a reader picks a row (`TiledLayout.selects`): the directory qtype must be the row's, the tensor
name must start with `names`, and then either the header flag `flag` is set, or (for the 4x4 Q8
tiling, which sets no flag, spec/vqf.md §decisions item 3) the caller passed `q8_tiling="4x4"`, or,
with neither, the qtype alone is enough (qtype 0x04 only ever holds Q4_8X8L).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from construct import Construct

from weightfile.spec.codecs.vqf.blocks import (
    QK,
    block_q4_0x4,
    block_q4_0x8,
    block_q8_0x4,
    block_q8_0x8,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType


@dataclass(frozen=True)
class TileGeometry:
    """Row-group interleave of spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l: G rows a group, k-byte
    payload chunks."""

    group_rows: int  # G: rows per group
    chunk_bytes: int  # k: interleave width (4 for 4x4 / 8x8 Q8, 8 for Q4_8X8L)
    block_payload_bytes: int  # bytes after the f16 scale in one base block (32 Q8, 16 Q4)
    xor: int  # XOR applied to every moved payload byte (0x88 for Q4 tiles, 0 for Q8)

    @property
    def group_block_bytes(self) -> int:
        """Bytes of one group block: G scales then G payloads (spec/vqf.md §q8-tiled: G·34;
        spec/vqf.md §q4-0: 72; spec/vqf.md §q4-8x8l: 144)."""
        return self.group_rows * (2 + self.block_payload_bytes)

    def scale_position(self, m: int) -> int:
        """Offset of row m's f16 scale inside a group block (row order, spec/vqf.md §q8-tiled)."""
        return 2 * m

    def payload_position(self, m: int, j: int) -> int:
        """Offset of row m's base payload byte j inside a group block (spec/vqf.md §q8-tiled, §q4-0,
        §q4-8x8l)."""
        g, k = self.group_rows, self.chunk_bytes
        return 2 * g + (j // k) * (k * g) + k * m + (j % k)


@dataclass(frozen=True)
class TiledLayout:
    """One tiled layout: which base codec it regroups, how, and what selects it."""

    name: str  # registry spelling (also the rule-id prefix vqf.codec.<name>.*)
    base: str  # the untiled codec that quantises; its blocks are moved, never changed
    qtype: QType  # the directory qtype that carries it (spec/vqf.md §qtype-codes)
    tiling: TileGeometry  # G, k, base payload bytes, XOR mask
    group_record: Construct  # the on-disk group block (spec/codecs/vqf/blocks.py)
    flag: VQFFlag | None  # the header flag that selects it, None when no flag does
    q8_tiling: Literal["4x4"] | None  # the caller's override that selects an unflagged layout
    names: str  # tensor-name prefix the selection applies to ("" = every name of the qtype)
    section: str  # where the layout is specified

    def selects(self, qtype: int, flags: int, name: str, q8_tiling: str | None) -> bool:
        """Whether a directory entry with this qtype, header flags and name uses this layout."""
        if qtype != self.qtype or not name.startswith(self.names):
            return False
        if self.flag is not None:
            return bool(flags & self.flag)
        if self.q8_tiling is not None:
            return q8_tiling == self.q8_tiling
        return True  # the qtype alone names it


_Q8_8X8 = TileGeometry(group_rows=8, chunk_bytes=4, block_payload_bytes=QK, xor=0)
_Q8_4X4 = TileGeometry(group_rows=4, chunk_bytes=4, block_payload_bytes=QK, xor=0)
_Q4_4X4 = TileGeometry(group_rows=4, chunk_bytes=4, block_payload_bytes=QK // 2, xor=0x88)
_Q4_8X8L = TileGeometry(group_rows=8, chunk_bytes=8, block_payload_bytes=QK // 2, xor=0x88)

#: Every tiled layout by registry name, in registry order.
TILED: dict[str, TiledLayout] = {
    t.name: t
    for t in (
        # Q8 tiled by 8 rows, 272 B groups: row m's code j at 16 + 32(j div 4) + 4m + j mod 4.
        TiledLayout("q8_0_8x8", "q8_0", QType.Q8_0, _Q8_8X8, block_q8_0x8,
                    VQFFlag.Q8_8X8, None, "", "spec/vqf.md §5.6"),
        # Q8 tiled by 4 rows, 136 B groups (writer run with VLLM_Q8_8X8=0): no flag says so.
        TiledLayout("q8_0_4x4", "q8_0", QType.Q8_0, _Q8_4X4, block_q8_0x4,
                    None, "4x4", "", "spec/vqf.md §5.6"),
        # Q4 tiled by 4 rows, 72 B groups: row m's byte k at 8 + 16(k div 4) + 4m + k mod 4, ^0x88.
        TiledLayout("q4_0_4x4", "q4_0", QType.Q4_0, _Q4_4X4, block_q4_0x4,
                    VQFFlag.Q4_4X4, None, "q4_", "spec/vqf.md §5.7"),
        # x8_* copies (ggml block_q4_0x8): row m's byte k at 16 + 64(k div 8) + 8m + k mod 8,
        # ^0x88. This is the layout of legacy Q4_0 input; writers that also set Q4_4X4 shuffle
        # already-4x4 bytes instead (spec/vqf.md §decisions item 4), which is not modelled.
        TiledLayout("q4_0_8x8l", "q4_0", QType.Q4_8X8L, _Q4_8X8L, block_q4_0x8,
                    None, None, "", "spec/vqf.md §5.8"),
        # G256 is quantised first and then repacked like Q8 (spec/vqf.md §g256).
        TiledLayout("g256_8x8", "g256", QType.Q8_0, _Q8_8X8, block_q8_0x8,
                    VQFFlag.Q8_8X8, None, "", "spec/vqf.md §5.5"),
        # spec/vqf.md §g256 names only 8x8, but the writer's 4x4 fallback
        # (spec/vqf.md §repack-gates) applies to G256 files too.
        TiledLayout("g256_4x4", "g256", QType.Q8_0, _Q8_4X4, block_q8_0x4,
                    None, "4x4", "", "spec/vqf.md §5.5"),
    )
}  # fmt: skip


def tiled_layout(base: str, qtype: int, flags: int, name: str, q8_tiling: str | None) -> str:
    """The tiled layout of `base` this entry selects, else `base` itself (spec/vqf.md §q8-tiled,
    §q4-0, §q4-8x8l)."""
    for t in TILED.values():
        if t.base == base and t.selects(qtype, flags, name, q8_tiling):
            return t.name
    return base


__all__ = ["TILED", "TileGeometry", "TiledLayout", "tiled_layout"]
