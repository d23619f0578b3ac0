"""The VQF codec registry: names, block geometry, sizes and the layout rule (spec/vqf.md
§qtype-codes, §encodings).

Every payload layout a VQF directory entry can carry has one registry name. The qtype alone never
names the layout (spec/vqf.md §qtype-codes): `codec_for` derives it from the qtype, the header flags
and the tensor name (spec/vqf.md §flags, §encodings, §inventory). Tiled layouts are a tiling
(`TileGeometry`) applied to an untiled base codec, which is how the writer produces them and why
tiling never changes the size (spec/vqf.md §size-function); each is one row of `layouts.TILED`, from
which this registry derives its entry and `codec_for` its selection.

Rule ids are `vqf.codec.<name>.<rule>` (see `rule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from construct import Construct

from weightfile.spec.codecs.vqf.blocks import QK, block_q4_0, block_q8_0
from weightfile.spec.codecs.vqf.layouts import TILED, TiledLayout, TileGeometry, tiled_layout
from weightfile.spec.errors import InvalidError, UnsupportedError, Violation
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: Encoder modes: the current Kestrel quantisers
#: (spec/vqf.md §quant-q8-0, §quant-q4-0, §quant-q4i8-g256), the older engine build
#: (spec/vqf.md §f16-rne), ggml's reference quantisers (spec/vqf.md §vs-ggml); for F16 the converter
#: itself (RNE spec/vqf.md §f16-rne, truncating spec/vqf.md §f16).
Mode = Literal["kestrel", "kestrel_legacy", "ggml", "rne", "trunc_ftz"]


@dataclass(frozen=True)
class Codec:
    """One registered VQF payload layout."""

    name: str  # registry spelling; also the module name in ref/ and fast/
    qtype: int  # directory qtype that carries it (spec/vqf.md §qtype-codes)
    block_elements: int  # elements per block
    block: Construct | None  # the on-disk block record (None for plain f32/f16 words)
    element_bytes: int  # bytes per element for the unblocked codecs (f32, f16), else 0
    row_group: int  # rows that must divide R (1 when untiled)
    cols_multiple: int  # what must divide C (1 when untiled)
    base: str  # the untiled codec a tiled layout rearranges (itself when untiled)
    tiling: TileGeometry | None  # how `base` blocks are rearranged
    # (spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l)
    modes: tuple[str, ...]  # accepted encoder modes, the default first
    group_record: Construct | None = None  # the tile group record, for tiled layouts

    @property
    def block_bytes(self) -> int:
        """Bytes per block, as the size of its record (or the element size)."""
        return self.block.sizeof() if self.block is not None else self.element_bytes

    @property
    def default_mode(self) -> str:
        return self.modes[0]


_Q8_MODES = ("kestrel", "kestrel_legacy", "ggml")
_Q4_MODES = ("kestrel", "kestrel_legacy", "ggml")
_KESTREL_ONLY = ("kestrel", "kestrel_legacy")


def _untiled(name: str, qtype: int, block: Construct, modes: tuple[str, ...]) -> Codec:
    return Codec(name, qtype, QK, block, 0, 1, 1, name, None, modes)


def _tiled(t: TiledLayout, base: Codec) -> Codec:
    """The registry entry of a layouts.TILED row: the base's blocks, the row's group geometry."""
    return Codec(
        t.name,
        t.qtype,
        QK,
        base.block,
        0,
        t.tiling.group_rows,
        QK,
        base.name,
        t.tiling,
        base.modes,
        t.group_record,
    )


_F32 = Codec("f32", QType.F32, 1, None, 4, 1, 1, "f32", None, ("kestrel",))
_F16 = Codec("f16", QType.F16, 1, None, 2, 1, 1, "f16", None, ("rne", "trunc_ftz"))
_Q8_0 = _untiled("q8_0", QType.Q8_0, block_q8_0, _Q8_MODES)
_Q4_0 = _untiled("q4_0", QType.Q4_0, block_q4_0, _Q4_MODES)
_Q4I8 = _untiled("q4i8", QType.Q8_0, block_q8_0, _KESTREL_ONLY)
_G256 = _untiled("g256", QType.Q8_0, block_q8_0, _KESTREL_ONLY)

#: Every VQF layout by registry name.
_UNTILED = {c.name: c for c in (_F32, _F16, _Q8_0, _Q4_0, _Q4I8, _G256)}

#: Every VQF layout by registry name: the untiled codecs, then one per layouts.TILED row.
CODECS: dict[str, Codec] = _UNTILED | {t.name: _tiled(t, _UNTILED[t.base]) for t in TILED.values()}

#: Elements that share one G256 scale (spec/vqf.md §g256).
G256_GROUP = 256


def rule(codec: str, what: str) -> str:
    """The rule id `vqf.codec.<codec>.<what>`."""
    return f"vqf.codec.{codec}.{what}"


def n_blocks(name: str, rows: int, cols: int) -> int:
    """Blocks in a payload of rows·cols elements: ceil(N / block elements) (spec/vqf.md
    §size-function)."""
    c = CODECS[name]
    return -(-(rows * cols) // c.block_elements)


def payload_size(name: str, rows: int, cols: int) -> int:
    """Payload bytes for a [rows x cols] tensor (spec/vqf.md §size-function); tiling, G256 and Q4I8
    never change it."""
    return n_blocks(name, rows, cols) * CODECS[name].block_bytes


def shape_violation(name: str, rows: object, cols: object) -> Violation | None:
    """Why [rows x cols] cannot carry this layout (negative, non-integer, tiling divisibility)."""
    c = CODECS[name]
    for label, n in (("rows", rows), ("cols", cols)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return Violation(
                rule(name, "shape"),
                f"{label} must be an integer >= 0",
                None,
                label,
                "MalformedError",
            )
    assert isinstance(rows, int) and isinstance(cols, int)
    if rows % c.row_group or cols % c.cols_multiple:
        return Violation(
            rule(name, "geometry"),
            f"needs rows % {c.row_group} == 0 and cols % {c.cols_multiple} == 0",
            None,
            "shape",
            "MalformedError",
        )
    return None


def codec_for(
    qtype: int,
    flags: int,
    name: str,
    *,
    q8_tiling: Literal["legacy", "4x4"] | None = None,
    shape: tuple[int, int] | None = None,
) -> str:
    """The registry name of the layout a directory entry uses (spec/vqf.md §qtype-codes, §flags,
    §encodings, §weight-modes, §vision-tensors).

    `q8_tiling` resolves spec/vqf.md §decisions item 3: a 4x4-tiled Q8 file sets no flag and looks
    legacy, so with Q8_8X8 clear a caller who knows the writer ran with VLLM_Q8_8X8=0 passes "4x4".
    It is refused when Q8_8X8 is set, because the flag already says 8x8.

    `shape` is the physical per-layer [R, C] (spec/vqf.md §text-tensors). A matrix that cannot be
    tiled (R % G or C % 32 not zero) "stays legacy" (spec/vqf.md §q8-tiled); with a shape given,
    such a matrix gets the untiled base layout (e.g. a q8_lm whose vocabulary is not a multiple of
    8, which spec/vqf.md §repack-gates does not gate).
    """
    chosen = _layout(qtype, flags, name, q8_tiling)
    c = CODECS[chosen]
    if shape is not None and c.tiling is not None:
        rows, cols = shape
        if rows % c.row_group or cols % c.cols_multiple:
            return c.base
    return chosen


def _layout(qtype: int, flags: int, name: str, q8_tiling: str | None) -> str:
    """The layout the flags and the name select, before the per-matrix geometry check."""
    if q8_tiling not in (None, "legacy", "4x4"):
        raise InvalidError("vqf.codec.q8_tiling", "q8_tiling must be 'legacy' or '4x4'")
    if q8_tiling == "4x4" and flags & VQFFlag.Q8_8X8:
        raise InvalidError("vqf.codec.q8_tiling", "q8_tiling='4x4' contradicts flag Q8_8X8")
    if qtype == QType.Q8_0 and name.startswith("v_"):
        return "q8_0"  # vision matrices are always legacy (spec/vqf.md §vision-tensors)
    return tiled_layout(_base(qtype, flags), qtype, flags, name, q8_tiling)


def _base(qtype: int, flags: int) -> str:
    """The untiled codec whose blocks an entry of this qtype holds (spec/vqf.md §f32, §f16, §q8-0,
    §q4i8, §g256, §q4-8x8l)."""
    if qtype == QType.F32:
        return "f32"
    if qtype == QType.F16:
        return "f16"
    # x8_* copies are regrouped Q4_0 blocks (spec/vqf.md §q4-8x8l)
    if qtype in (QType.Q4_0, QType.Q4_8X8L):
        return "q4_0"
    if qtype == QType.Q8_0:
        if flags & VQFFlag.Q8BUF_Q4:
            # Q4I8 payloads are never tiled (spec/vqf.md §q4i8): no layouts.TILED row has it
            return "q4i8"
        return "g256" if flags & VQFFlag.G256 else "q8_0"
    raise UnsupportedError("vqf.codec.qtype", f"qtype {qtype:#x} names no VQF encoding")


__all__ = [
    "CODECS",
    "G256_GROUP",
    "Codec",
    "Mode",
    "TileGeometry",
    "TiledLayout",
    "codec_for",
    "n_blocks",
    "payload_size",
    "rule",
    "shape_violation",
]
