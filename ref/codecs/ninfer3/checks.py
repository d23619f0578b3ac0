"""Checks every `.ninfer` v3 codec makes before it touches payload bytes or values
(spec/ninfer3.md §layout-registry, §validation).

The order is fixed so that fast and ref fail alike: the shape fits the layout, then the payload
length equals the encoded size (before anything is allocated from the shape), then the words.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import numpy as np

from weightfile.spec.codecs.ninfer3.layouts import encoded_size, shape_problem
from weightfile.spec.codecs.ninfer3.registry import LENGTH, SHAPE, VALUES, rule
from weightfile.spec.errors import InvalidError, MalformedError, Violation, WeightfileError


def require_shape(layout: str, shape: Iterable[int]) -> tuple[int, ...]:
    """The shape fits the layout's spec/ninfer3.md §layout-registry constraint; returns it as a
    tuple of Python ints.

    Integer-like dimensions (NumPy integers) are accepted; booleans and non-integers are not.
    """
    try:
        shape = tuple(
            operator.index(d) if not isinstance(d, bool | np.bool_) else None for d in shape
        )
    except TypeError:
        shape = (None,)
    problem = shape_problem(layout, shape)
    if problem is not None:
        raise InvalidError(rule(layout, SHAPE), problem, path="shape")
    return shape


def length_violation(
    format_name: str | None, layout: str, payload: bytes, shape: tuple[int, ...]
) -> Violation | None:
    """A MalformedError record when `len(payload)` is not the encoded size, else None."""
    want = encoded_size(format_name or "", layout, shape)
    if len(payload) == want:
        return None
    return Violation(
        rule(layout, LENGTH),
        f"payload is {len(payload)} bytes, encoded size is {want}",
        offset=min(len(payload), want),
        path="bytes",
        error_class="MalformedError",
    )


def require_length(
    format_name: str | None, layout: str, payload: bytes, shape: tuple[int, ...]
) -> None:
    """Raise MalformedError unless `len(payload)` equals the encoded size."""
    v = length_violation(format_name, layout, payload, shape)
    if v is not None:
        raise MalformedError(v.rule, v.detail, offset=v.offset, path=v.path)


def require_values(
    layout: str, values: np.ndarray, shape: tuple[int, ...], dtype: type = np.float32
) -> None:
    """An encoder's input is an ndarray of exactly `dtype` in the logical shape."""
    if not isinstance(values, np.ndarray) or values.dtype != dtype:
        raise InvalidError(rule(layout, VALUES), f"values must be a {np.dtype(dtype)} ndarray")
    if values.shape != shape:
        raise InvalidError(rule(layout, VALUES), f"values shape {values.shape} != {shape}")


def sorted_violations(found: Iterable[Violation]) -> list[Violation]:
    """Violations in payload order: by byte offset, then rule id (the order fast reproduces)."""
    return sorted(found, key=lambda v: (v.offset if v.offset is not None else -1, v.rule))


def raise_first(violations: list[Violation]) -> None:
    """Raise the first violation, if any, as the error class it names."""
    if violations:
        raise WeightfileError.from_violation(violations[0])
