"""Deferred object checks, run only when an object is used (spec/ninfer3.md §validation,
§layout-registry).

Unknown formats and layouts never fail the open; they fail the use of that one object. The
writer calls `encoded_tensor_bytes` to place tensors, so both sides share these checks, and the
shape rule and encoded size are the codecs' own (`weightfile.spec.codecs.ninfer3.layouts`).
"""

from __future__ import annotations

from collections.abc import Sequence

from weightfile.ref.ninfer3.records import ObjectEntry
from weightfile.ref.ninfer3.require import require
from weightfile.spec.codecs.ninfer3.layouts import encoded_size, shape_problem
from weightfile.spec.ninfer3.registry import ENCODINGS, FORMATS, LAYOUTS


def encoded_tensor_bytes(fmt: str, layout: str, shape: Sequence[int], path: str) -> int:
    """Format and layout registered and compatible, shape fits; returns encoded_size
    (spec/ninfer3.md §validation)."""
    require(fmt in FORMATS, "ninfer3.object.format", f"format {fmt!r} is not registered", path)
    require(
        layout in LAYOUTS, "ninfer3.object.layout", f"layout {layout!r} is not registered", path
    )
    require(
        fmt in LAYOUTS[layout].accepts,
        "ninfer3.object.layout_accepts",
        f"{layout} does not accept {fmt}",
        path,
    )
    problem = shape_problem(layout, tuple(shape))
    require(problem is None, "ninfer3.object.shape", problem or "", path)
    return encoded_size(fmt, layout, tuple(shape))


def check_tensor(entry: ObjectEntry) -> None:
    """A tensor's deferred rules, in spec/ninfer3.md §validation order, ending with bytes and offset
    alignment."""
    assert entry.format is not None and entry.layout is not None and entry.shape is not None
    want = encoded_tensor_bytes(entry.format, entry.layout, entry.shape, entry.path)
    require(
        entry.bytes == want,
        "ninfer3.object.bytes",
        f"bytes {entry.bytes} != encoded size {want}",
        f"{entry.path}.bytes",
    )
    alignment = LAYOUTS[entry.layout].alignment
    require(
        entry.offset % alignment == 0,
        "ninfer3.object.offset_alignment",
        f"offset {entry.offset} is not a multiple of {alignment}",
        f"{entry.path}.offset",
    )


def check_resource(entry: ObjectEntry) -> None:
    """A resource's encoding is raw_bytes_v1 (spec/ninfer3.md §validation, §raw-bytes)."""
    require(
        entry.encoding in ENCODINGS,
        "ninfer3.object.encoding",
        f"encoding {entry.encoding!r} is not registered",
        f"{entry.path}.encoding",
    )


def check_object(entry: ObjectEntry) -> None:
    """Every deferred check of one object (spec/ninfer3.md §validation)."""
    if entry.kind == "tensor":
        check_tensor(entry)
    else:
        check_resource(entry)
