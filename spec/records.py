"""The schema boundary: the one place construct's errors become ours (conventions, "Errors").

Every record is parsed from a bounds-checked slice, so a truncated input is reported with the
rule, the record's path and its byte offset, and never as a raw construct or struct error.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from construct import ConstError, ConstructError, Struct

from .errors import MalformedError


def parse_record(
    schema: Struct, buffer: Any, offset: int, *, rule: str, path: str, const_rule: str = ""
) -> Any:
    """Parse one fixed-size record at `offset` of `buffer` (bytes, memoryview or mmap)."""
    size = _size(schema)
    available = len(buffer) - offset
    if offset < 0 or available < size:
        raise MalformedError(
            rule,
            truncated(size, max(available, 0), path),
            offset=offset,
            path=path,
        )
    try:
        return schema.parse(bytes(buffer[offset : offset + size]))
    except ConstError as exc:
        raise MalformedError(
            const_rule or rule, const_message(exc, path), offset=offset, path=path
        ) from exc
    except ConstructError as exc:  # pragma: no cover - fixed-size records cannot run short
        raise MalformedError(rule, _first_line(exc), offset=offset, path=path) from exc


@functools.cache
def _size(schema: Struct) -> int:
    # construct recomputes sizeof by walking the whole schema on every call; a record schema is
    # a module constant, so once per schema is enough (a third of a VQF open was this walk).
    return schema.sizeof()


def build_record(schema: Struct, value: Any, *, rule: str, path: str) -> bytes:
    """Build one record; a value the schema cannot hold (negative, too wide) is an InvalidError."""
    from .errors import InvalidError

    try:
        return schema.build(value)
    except ConstructError as exc:
        raise InvalidError(rule, f"cannot encode {build_message(exc, path)}", path=path) from exc


def truncated(needed: int, available: int, what: str) -> str:
    """The one wording of a short input: how many bytes are missing, then what needed them."""
    return (
        f"truncated, {needed - available} bytes missing ({what} needs {needed}, {available} remain)"
    )


_CONST = re.compile(r"expected (?P<want>.+?) but parsed (?P<got>.+)$", re.S)


def const_message(exc: ConstError, path: str) -> str:
    """A constant field that holds the wrong bytes, in our words.

    construct says ``Error in path (parsing) -> magic`` then ``parsing expected b'X' but parsed
    b'Y'``; users see ``header.magic is b'Y', expected b'X'`` (conventions, "Errors").
    """
    where = _where(exc, path)
    found = _CONST.search(str(exc))
    if found is None:
        return f"{where} does not hold its constant value"
    got, want = (_show(found[k].strip()) for k in ("got", "want"))
    return f"{where} is {got}, expected {want}"


def _show(value: str) -> str:
    """Integers (magic numbers) in hex, as the fact sheets write them; bytes as construct shows."""
    return f"0x{int(value):08X}" if value.isdigit() else value


_GIVEN = re.compile(r"given value (?P<value>.+)$", re.S)


def build_message(exc: ConstructError, path: str) -> str:
    """`header.arch.n_layers: -1 does not fit the field` instead of construct's ``Error in path
    (building) -> ...`` and its struct format codes."""
    where = _where(exc, path)
    given = _GIVEN.search(str(exc))
    if given is not None:
        return f"{where}: {given['value'].strip()} does not fit the field"
    lines = str(exc).strip().splitlines()
    return f"{where}: {lines[-1] if lines else type(exc).__name__}"


def _where(exc: ConstructError, path: str) -> str:
    """`path.field.subfield` from construct's ``(parsing) -> field -> subfield``."""
    steps = [p.strip() for p in str(getattr(exc, "path", "") or "").split("->")]
    fields: list[str] = []
    for step in steps:  # construct names a renamed constant twice (magic -> magic)
        if step and not step.startswith("(") and (not fields or fields[-1] != step):
            fields.append(step)
    return ".".join([path, *fields])


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
