"""The schema boundary: the one place construct's errors become ours (conventions, "Errors").

Every record is parsed from a bounds-checked slice, so a truncated input is reported with the
rule, the record's path and its byte offset, and never as a raw construct or struct error.
"""

from __future__ import annotations

from typing import Any

from construct import ConstError, ConstructError, Struct

from .errors import MalformedError


def parse_record(
    schema: Struct, buffer: Any, offset: int, *, rule: str, path: str, const_rule: str = ""
) -> Any:
    """Parse one fixed-size record at `offset` of `buffer` (bytes, memoryview or mmap)."""
    size = schema.sizeof()
    available = len(buffer) - offset
    if offset < 0 or available < size:
        raise MalformedError(
            rule,
            f"{path} needs {size} bytes but only {max(available, 0)} remain",
            offset=offset,
            path=path,
        )
    try:
        return schema.parse(bytes(buffer[offset : offset + size]))
    except ConstError as exc:
        raise MalformedError(
            const_rule or rule, _first_line(exc), offset=offset, path=path
        ) from exc
    except ConstructError as exc:  # pragma: no cover - fixed-size records cannot run short
        raise MalformedError(rule, _first_line(exc), offset=offset, path=path) from exc


def build_record(schema: Struct, value: Any, *, rule: str, path: str) -> bytes:
    """Build one record; a value the schema cannot hold (negative, too wide) is an InvalidError."""
    from .errors import InvalidError

    try:
        return schema.build(value)
    except ConstructError as exc:
        raise InvalidError(rule, f"cannot encode {path}: {_first_line(exc)}", path=path) from exc


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
