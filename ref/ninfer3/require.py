"""One-line require helpers for the directory checks (spec/ninfer3.md §general, §closed-sets).

Each helper raises `InvalidError` naming the rule id and the JSON path when the value breaks
the domain, and returns the value (narrowed) when it holds. `attempt` runs one record's checks
either way a caller needs: the reader stops at the first error, `verify` records it and goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from weightfile.spec.errors import InvalidError, Violation, WeightfileError
from weightfile.spec.ninfer3.directory import Record
from weightfile.spec.ninfer3.domains import is_id, is_positive_u64, is_shape, is_u64

JSON_TYPES = {dict: "object", list: "array", str: "string"}

T = TypeVar("T")

#: Where `verify` collects violations; None for the reader, which stops at the first.
Sink = list[Violation] | None


def attempt(sink: Sink, check: Callable[..., T], *args: Any) -> T | None:
    """`check(*args)`; with a sink, its error is appended and None returned instead of raised."""
    if sink is None:
        return check(*args)
    try:
        return check(*args)
    except WeightfileError as exc:
        sink.append(exc.violation)
        return None


def fail(rule: str, detail: str, path: str | None = None) -> NoReturn:
    """Raise the directory error `rule` at `path`."""
    raise InvalidError(rule, detail, path=path)


def require(condition: bool, rule: str, detail: str, path: str | None = None) -> None:
    """Raise the directory error `rule` at `path` unless `condition` holds."""
    if not condition:
        fail(rule, detail, path)


def need_type(value: Any, kind: type, path: str) -> Any:
    """The value has JSON type `kind` (object, array or string): rule ninfer3.record.type."""
    require(
        type(value) is kind,
        "ninfer3.record.type",
        f"expected a JSON {JSON_TYPES[kind]}, got {_json_type(value)}",
        path,
    )
    return value


def need_members(value: Any, record: Record, path: str) -> dict[str, Any]:
    """An object whose member set fits the closed `record`: rule ninfer3.record.members."""
    need_type(value, dict, path)
    missing = [m for m in record.required if m not in value]
    unknown = sorted(set(value) - record.members)
    require(not missing, "ninfer3.record.members", f"{record.name} lacks {missing}", path)
    require(not unknown, "ninfer3.record.members", f"{record.name} has unlisted {unknown}", path)
    return value


def need_id(value: Any, path: str) -> str:
    """An ID (spec/ninfer3.md §general): rule ninfer3.value.id."""
    require(is_id(value), "ninfer3.value.id", f"not an ID: {value!r:.60}", path)
    return value


def need_u64(value: Any, path: str) -> int:
    """A U64 (spec/ninfer3.md §general): rule ninfer3.value.u64."""
    require(is_u64(value), "ninfer3.value.u64", f"not a U64: {value!r:.60}", path)
    return value


def need_positive_u64(value: Any, path: str) -> int:
    """A PositiveU64 (spec/ninfer3.md §general): rule ninfer3.value.positive_u64."""
    require(
        is_positive_u64(value), "ninfer3.value.positive_u64", f"not >= 1 U64: {value!r:.60}", path
    )
    return value


def need_shape(value: Any, path: str) -> list[int]:
    """A Shape (spec/ninfer3.md §general): rule ninfer3.value.shape."""
    require(is_shape(value), "ninfer3.value.shape", f"not a Shape: {value!r:.80}", path)
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) in (int, float):
        return "number"
    return JSON_TYPES.get(type(value), type(value).__name__)
