"""Byte schemas of the entry header and the continuation header (spec/ninfer3.md §entry-header,
§volume-header).

One record per header, fields in file order. Construct errors are translated here, once, into
our hierarchy; callers see `MalformedError` with the rule id and byte offset.
"""

from __future__ import annotations

from construct import Bytes, Const, ConstError, Container, Int64ul, StreamError, Struct

from weightfile.spec.errors import MalformedError
from weightfile.spec.records import truncated

ENTRY_MAGIC = b"NINFER\x00\x03"
CONTINUATION_MAGIC = b"NINPRT\x00\x03"
V2_MAGIC = b"NINFER\x00\x02"
HEADER_BYTES = 32
JSON_OFFSET = 32
PAYLOAD_ALIGNMENT = 4096  # entry payload start is align_up(32 + json_bytes, 4096)
PART_PAYLOAD_START = 4096  # a continuation volume's payload always starts here
ARTIFACT_ID_BYTES = 16
DEFAULT_LIMIT = 32_000_000_000  # writer policy only, never stored (spec/ninfer3.md §writer)

# The docs strings are the "meaning" column of the tables spliced into
# spec/ninfer3.md §entry-header, §volume-header.
EntryHeader = Struct(
    "magic" / Const(ENTRY_MAGIC) * "exactly 4E 49 4E 46 45 52 00 03 (`NINFER`, 0x00, 3)",
    "json_bytes" / Int64ul * ">= 1 and <= entry size - 32; the JSON text length",
    "artifact_id" / Bytes(ARTIFACT_ID_BYTES) * "random per file set; printed as 32 hex digits",
)

ContinuationHeader = Struct(
    "magic" / Const(CONTINUATION_MAGIC) * "exactly 4E 49 4E 50 52 54 00 03 (`NINPRT`, 0x00, 3)",
    "part_index" / Int64ul * ">= 1; equals this volume's index in `files`",
    "artifact_id" / Bytes(ARTIFACT_ID_BYTES) * "byte-identical to the entry's",
)


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of `alignment` that is >= `value` (spec/ninfer3.md §entry-header)."""
    return -(-value // alignment) * alignment


def entry_payload_start(json_bytes: int) -> int:
    """align_up(32 + json_bytes, 4096), the entry's payload start (spec/ninfer3.md
    §entry-header)."""
    return align_up(JSON_OFFSET + json_bytes, PAYLOAD_ALIGNMENT)


def _short(size: int, what: str) -> str:
    """An empty file says so; a shorter one says how many header bytes are missing."""
    return "file is empty" if size == 0 else truncated(HEADER_BYTES, size, what)


def parse_entry_header(data: bytes) -> Container:
    """Decode the 32-byte entry header; rules ninfer3.header.truncated / ninfer3.header.magic."""
    if len(data) < HEADER_BYTES:
        raise MalformedError(
            "ninfer3.header.truncated", _short(len(data), "the entry header"), offset=0
        )
    try:
        return EntryHeader.parse(data[:HEADER_BYTES])
    except ConstError:
        detail = "bad magic"
        if data[:8] == V2_MAGIC:
            detail = "bad magic: a .ninfer v2 file; upgrade it to v3"
        raise MalformedError("ninfer3.header.magic", detail, offset=0, path="magic") from None
    except StreamError as exc:  # pragma: no cover - length checked above
        raise AssertionError("entry header length was checked") from exc


def parse_continuation_header(data: bytes, *, path: str) -> Container:
    """Decode a continuation header; rules ninfer3.part.truncated / ninfer3.part.magic."""
    if len(data) < HEADER_BYTES:
        raise MalformedError(
            "ninfer3.part.truncated",
            _short(len(data), "the continuation header"),
            offset=0,
            path=path,
        )
    try:
        return ContinuationHeader.parse(data[:HEADER_BYTES])
    except ConstError:
        raise MalformedError("ninfer3.part.magic", "bad magic", offset=0, path=path) from None
    except StreamError as exc:  # pragma: no cover - length checked above
        raise AssertionError("continuation header length was checked") from exc


def build_entry_header(json_bytes: int, artifact_id: bytes) -> bytes:
    """The 32 header bytes of an entry file (spec/ninfer3.md §entry-header)."""
    return EntryHeader.build({"json_bytes": json_bytes, "artifact_id": artifact_id})


def build_continuation_header(part_index: int, artifact_id: bytes) -> bytes:
    """The 32 header bytes of continuation volume `part_index` (spec/ninfer3.md §volume-header)."""
    return ContinuationHeader.build({"part_index": part_index, "artifact_id": artifact_id})
