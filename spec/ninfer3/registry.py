"""The container's view of the format, layout and encoding registries (spec/ninfer3.md
§format-registry, §layout-registry).

The facts live once, in the codec spec (`weightfile.spec.codecs.ninfer3`): the spec/ninfer3.md
§format-registry formats in `formats`, the (format, layout) pairs in `registry`, and each layout's
object alignment, shape rule and encoded size in `layouts`. This module only arranges them the way
the directory checks and the writer look them up: by tensor layout (what it accepts, its alignment)
and by resource encoding. The registry has 10 format names (open question Q1: `t2_g128_fp16`
counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from weightfile.spec.codecs.ninfer3.formats import FORMATS
from weightfile.spec.codecs.ninfer3.layouts import LAYOUT_ALIGNMENT
from weightfile.spec.codecs.ninfer3.registry import CODECS

__all__ = ["DEVICE_ONLY_LAYOUTS", "ENCODINGS", "FORMATS", "LAYOUTS", "Encoding", "Layout"]


@dataclass(frozen=True, slots=True)
class Layout:
    """One tensor storage layout (spec/ninfer3.md §layout-registry): the formats it accepts and its
    object alignment."""

    name: str
    accepts: tuple[str, ...]
    alignment: int


@dataclass(frozen=True, slots=True)
class Encoding:
    """One resource encoding (spec/ninfer3.md §raw-bytes) and its object alignment."""

    name: str
    alignment: int


def _accepted_formats(layout: str) -> tuple[str, ...]:
    """The formats paired with `layout` in the codec registry, in registry order
    (spec/ninfer3.md §layout-registry)."""
    return tuple(fmt for fmt, paired in CODECS if paired == layout and fmt is not None)


#: Tensor layouts, in registry order; a resource codec (format None) is an encoding instead.
LAYOUTS: dict[str, Layout] = {
    layout: Layout(layout, _accepted_formats(layout), LAYOUT_ALIGNMENT[layout])
    for fmt, layout in CODECS
    if fmt is not None
}

ENCODINGS: dict[str, Encoding] = {
    layout: Encoding(layout, LAYOUT_ALIGNMENT[layout]) for fmt, layout in CODECS if fmt is None
}

#: A device-only name that is never a legal artifact layout (spec/ninfer3.md §validation); kept out
#: of LAYOUTS on purpose.
DEVICE_ONLY_LAYOUTS = ("row_split_panel4_v1",)
