"""Strict decoding of the JSON directory text (spec/ninfer3.md §header-checks step 4, §general, open
question Q6).

Rejects a BOM, invalid UTF-8, anything that is not standard JSON, the NaN / Infinity /
-Infinity literals, and a repeated member name at any depth. Python's `json` module does the
tokenising; duplicate detection needs the pairs, so objects are built here with their paths.
"""

from __future__ import annotations

import json
from typing import Any

from weightfile.spec.errors import MalformedError
from weightfile.spec.ninfer3.framing import JSON_OFFSET

BOM = b"\xef\xbb\xbf"


class _Pairs(list):
    """An object's members in text order, before duplicates are checked."""


def _reject_constant(name: str) -> Any:
    raise MalformedError("ninfer3.json.non_finite", f"{name} is not JSON", offset=JSON_OFFSET)


def decode_text(raw: bytes) -> str:
    """UTF-8 without a BOM (rules ninfer3.json.bom, ninfer3.json.utf8)."""
    if raw.startswith(BOM):
        raise MalformedError("ninfer3.json.bom", "JSON starts with a BOM", offset=JSON_OFFSET)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedError(
            "ninfer3.json.utf8", "JSON is not UTF-8", offset=JSON_OFFSET + exc.start
        ) from None


def parse_json(raw: bytes) -> Any:
    """Parse the directory text strictly (spec/ninfer3.md §general); rules ninfer3.json.*."""
    text = decode_text(raw)
    try:
        tree = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_reject_constant)
        return _build(tree, "")
    except json.JSONDecodeError as exc:
        offset = JSON_OFFSET + len(text[: exc.pos].encode("utf-8"))
        raise MalformedError("ninfer3.json.syntax", exc.msg.lower(), offset=offset) from None
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, MalformedError):
            raise
        # e.g. an integer literal longer than Python's digit limit, or absurd nesting depth
        detail = "unparseable JSON"
        raise MalformedError("ninfer3.json.syntax", detail, offset=JSON_OFFSET) from None


def _build(node: Any, path: str) -> Any:
    """Turn member pairs into dicts, rejecting a repeated name (ninfer3.json.duplicate_member)."""
    if isinstance(node, _Pairs):
        out: dict[str, Any] = {}
        for key, value in node:
            child = f"{path}.{key}" if path else key
            if key in out:
                raise MalformedError(
                    "ninfer3.json.duplicate_member",
                    f"member {key!r} repeats",
                    offset=JSON_OFFSET,
                    path=child,
                )
            out[key] = _build(value, child)
        return out
    if isinstance(node, list):
        return [_build(v, f"{path}[{i}]") for i, v in enumerate(node)]
    return node
