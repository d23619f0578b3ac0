"""What a binder needs from bindings and uses (spec/ninfer3.md §binding, §use, §validation).

The generic reader has already checked forms and ranges at open time; these functions resolve
a Binding to element ranges and apply the checks an architecture binder makes: shape or
coverage against the parameter's shape, accepted auxiliary roles, the scalar FP32 divisor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from weightfile.ref.ninfer3.records import Binding, ObjectEntry, Use, member_path
from weightfile.ref.ninfer3.require import require
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.ninfer3.directory import AUXILIARY_ROLES
from weightfile.spec.ninfer3.domains import elements

DIVISOR_ROLE = "activation_input_divisor"
HADAMARD_ROLE = "hadamard_signs"
HADAMARD_BLOCK = 1024  # signs multiply each 1024-block of the input (spec/ninfer3.md §use)
SIGN_WORDS = {0x3F80: 1, 0xBF80: -1}  # bf16 +1.0 and −1.0


@dataclass(frozen=True, slots=True)
class ElementRange:
    """Logical elements [begin, end) of tensor `object_id`, in C order (spec/ninfer3.md
    §binding)."""

    object_id: str
    begin: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.begin


def element_ranges(binding: Binding, objects: dict[str, ObjectEntry]) -> list[ElementRange]:
    """The binding as ordered element ranges: the whole object, or the parts in order
    (spec/ninfer3.md §binding)."""
    if binding.object_id is not None:
        shape = objects[binding.object_id].shape
        assert shape is not None
        return [ElementRange(binding.object_id, 0, elements(shape))]
    assert binding.parts is not None
    return [ElementRange(p.object_id, p.begin, p.end) for p in binding.parts]


def whole_row_width(ranges: Sequence[ElementRange], objects: dict[str, ObjectEntry]) -> int:
    """Elements per row when the parts join as rows: every parent has rank >= 1 and one common
    row shape (the dimensions after the first), and every range is whole rows; else 0, and the
    parts join only as a flat run of elements (spec/ninfer3.md §binding).

    Both are valid bindings: spec/ninfer3.md §binding lets parts reshape, split and reorder freely,
    so mixed cuts, row shapes or formats are no container or binder error. Only a caller that
    wants the rows (or the stored words) of such a binding has to ask which case it is."""
    row_shapes = {tuple(objects[r.object_id].shape or ())[1:] for r in ranges}
    ranks = {len(objects[r.object_id].shape or ()) for r in ranges}
    if len(row_shapes) != 1 or 0 in ranks:
        return 0
    width = math.prod(row_shapes.pop())
    return width if all(r.begin % width == 0 and r.end % width == 0 for r in ranges) else 0


def require_common_words(
    binding: Binding, ranges: Sequence[ElementRange], objects: dict[str, ObjectEntry]
) -> None:
    """The stored words of a binding exist only when its parts are whole rows of one row shape
    and of one (format, layout): scales belong to groups of a row, and each encoding has its own
    words (spec/ninfer3.md §binding, §layout-registry). The values of any valid binding still
    decode."""
    kinds = {(objects[r.object_id].format, objects[r.object_id].layout) for r in ranges}
    if whole_row_width(ranges, objects) and len(kinds) == 1:
        return
    raise UnsupportedError(
        "ninfer3.range.words",
        "the parts cut through rows or differ in row shape, format or layout: they have no "
        "common word set; decode their values instead",
        path=binding.path,
    )


def bind_parameter(
    binding: Binding, shape: Sequence[int], objects: dict[str, ObjectEntry]
) -> list[ElementRange]:
    """Whole: object shape == parameter shape; parts: Σ(end−begin) == elements(shape)
    (spec/ninfer3.md §binding)."""
    ranges = element_ranges(binding, objects)
    if binding.object_id is not None:
        have = objects[binding.object_id].shape
        require(
            have == tuple(shape),
            "ninfer3.binder.shape",
            f"object shape {list(have or ())} != parameter shape {list(shape)}",
            binding.path,
        )
        return ranges
    total = sum(r.count for r in ranges)
    require(
        total == elements(shape),
        "ninfer3.binder.coverage",
        f"parts cover {total} elements, parameter {list(shape)} has {elements(shape)}",
        binding.path,
    )
    return ranges


def check_auxiliary_roles(use: Use) -> None:
    """Every auxiliary role is one the Qwen binder accepts (spec/ninfer3.md §use)."""
    for role in use.auxiliaries:
        require(
            role in AUXILIARY_ROLES,
            "ninfer3.binder.auxiliary_role",
            f"auxiliary role {role!r} is not accepted",
            member_path(f"uses[{use.index}].auxiliaries", role),
        )


def divisor_element(binding: Binding, objects: dict[str, ObjectEntry]) -> ElementRange:
    """The activation divisor is one FP32 element: a shape-[] object or a 1-element Part of an
    fp32 contiguous vector (spec/ninfer3.md §use); rule ninfer3.binder.divisor."""
    ranges = element_ranges(binding, objects)
    parent = objects[ranges[0].object_id]
    if binding.object_id is not None:
        ok = parent.shape == ()
    else:
        ok = len(ranges) == 1 and ranges[0].count == 1 and len(parent.shape or ()) == 1
    ok = ok and parent.format == "fp32" and parent.layout == "contiguous_le_v1"
    require(ok, "ninfer3.binder.divisor", "divisor is not one FP32 element", binding.path)
    return ranges[0]


def hadamard_ranges(
    binding: Binding, parameter_shape: Sequence[int], objects: dict[str, ObjectEntry]
) -> list[ElementRange]:
    """hadamard_signs: a bf16 contiguous vector of K = parameter columns, K % 1024 == 0, for a
    matrix parameter (spec/ninfer3.md §use); rule ninfer3.binder.hadamard, whose message says
    which condition failed. The ±1 values are checked on read."""
    ranges = element_ranges(binding, objects)
    parents = [objects[r.object_id] for r in ranges]
    count = sum(r.count for r in ranges)

    def need(ok: bool, detail: str) -> None:
        require(ok, "ninfer3.binder.hadamard", detail, binding.path)

    need(len(parameter_shape) == 2, f"the parameter {list(parameter_shape)} is not a matrix")
    k = parameter_shape[1]
    need(k % HADAMARD_BLOCK == 0, f"the column count K = {k} is not a multiple of 1024")
    need(count == k, f"{count} signs for K = {k} columns")
    need(
        all(p.format == "bf16" and p.layout == "contiguous_le_v1" for p in parents),
        "signs are not bf16 in contiguous_le_v1",
    )
    if binding.object_id is not None:
        need(len(parents[0].shape or ()) == 1, "the signs object is not a vector")
    return ranges
