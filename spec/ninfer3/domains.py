"""The value domains of the JSON directory: ID, U64, PositiveU64, Shape (spec/ninfer3.md §general).

Pure predicates over parsed JSON values (Python `bool` is an `int` subclass, so it is excluded
by type, and a float is never an integer here, even `5.0`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

U64_MAX = 2**64 - 1
MAX_RANK = 16


def is_u64(value: Any) -> bool:
    """A JSON integer in [0, 2^64−1]; floats, booleans and negatives are not (spec/ninfer3.md
    §general U64)."""
    return type(value) is int and 0 <= value <= U64_MAX


def is_positive_u64(value: Any) -> bool:
    """A U64 that is at least 1 (spec/ninfer3.md §general PositiveU64)."""
    return is_u64(value) and value >= 1


def is_id(value: Any) -> bool:
    """A non-empty string of valid UTF-8 (no lone surrogates) without U+0000 (spec/ninfer3.md
    §general ID)."""
    if type(value) is not str or not value or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \uD800-style escape
        return False
    return True


def elements(shape: Sequence[int]) -> int:
    """The product of the dims; elements([]) = 1 (spec/ninfer3.md §general Shape)."""
    count = 1
    for dim in shape:
        count *= dim
    return count


def is_shape(value: Any) -> bool:
    """An array of 0..16 PositiveU64 whose product is <= 2^64−1 (spec/ninfer3.md §general Shape)."""
    if type(value) is not list or len(value) > MAX_RANK:
        return False
    return all(is_positive_u64(d) for d in value) and elements(value) <= U64_MAX
