"""Hand-built `.ninfer` v3 file sets for the conformance corpus (spec/ninfer3.md §entry-header,
§volume-header, §header-checks, §files-table, §framing-numbers).

The two base sets are the spec's own spec/ninfer3.md §framing-numbers fixtures: the hand-made tiny
single file (265-byte payload, JSON space-padded to json_bytes 4064, file size 4,361) and the C++
reader fixture (files 500 / 780 / 64, `json_bytes` the raw JSON length, alignment area zero-filled).
`write_set` writes any directory by hand with the framing constants of spec/ninfer3/framing.py, so
an invalid directory, header or volume can be written too; the reference writer is used only for
valid sets.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weightfile.spec.ninfer3.framing import (
    PART_PAYLOAD_START,
    build_continuation_header,
    build_entry_header,
    entry_payload_start,
)

ENTRY_NAME = "model.ninfer"
FIXED_ID = bytes(range(16))  # spec/ninfer3.md §framing-numbers: the hand-made files use 00 01 .. 0f


def _tensor(oid: str, shape: list[int], fmt: str, offset: int, size: int, layout: str) -> Any:
    return {"id": oid, "kind": "tensor", "shape": shape, "format": fmt, "layout": layout} | {
        "offset": offset,
        "bytes": size,
    }


def _resource(oid: str, offset: int, size: int) -> Any:
    return {"id": oid, "kind": "resource", "encoding": "raw_bytes_v1"} | {
        "offset": offset,
        "bytes": size,
    }


def tiny_doc() -> dict[str, Any]:
    """The spec/ninfer3.md §framing-numbers hand-made tiny single file's directory: 265-byte
    payload, three objects."""
    return {
        "components": {"text": {"config": {}, "resources": {"greeting": "r.hello"}}},
        "objects": [
            _tensor("w.bf16", [4], "bf16", 0, 8, "contiguous_le_v1"),
            _tensor("w.scalar", [], "fp32", 256, 4, "contiguous_le_v1"),
            _resource("r.hello", 260, 5),
        ],
        "bindings": {
            "p.vec": {"object": "w.bf16"},
            "p.split": {
                "parts": [
                    {"object": "w.bf16", "range": [2, 4]},
                    {"object": "w.bf16", "range": [0, 2]},
                ]
            },
        },
        "uses": [{"parameter": "p.vec", "input": "x", "activation_policy": "A16Only"}],
        "files": [{"path": None, "payload_bytes": 265}],
        "metadata": {"name": "tiny"},
        "provenance": {},
    }


#: spec/ninfer3.md §framing-numbers: bf16 words 0x0000, 0x8000, 0x3F80, 0x7FC1 LE at 0; fp32 2.0 at
#: 256; "hello" at 260.
TINY_PAYLOAD = bytes.fromhex("00000080803fc17f") + bytes(248) + bytes.fromhex("00000040") + b"hello"


def sharded_doc() -> dict[str, Any]:
    """The spec/ninfer3.md §framing-numbers C++ reader fixture's file table (500 / 780 / 64) over a
    tiny-like directory.

    The 528-byte q5 [2,130] object at 256 straddles the entry and part 1; the resource at
    1250..1290 straddles parts 1 and 2.
    """
    doc = tiny_doc()
    doc["objects"] = [
        _tensor("w.bf16", [4], "bf16", 0, 8, "contiguous_le_v1"),
        _tensor("w.q5", [2, 130], "q5_g64_fp16", 256, 528, "row_split_k128_v1"),
        _tensor("w.scalar", [], "fp32", 1024, 4, "contiguous_le_v1"),
        _resource("r.hello", 1250, 40),
    ]
    doc["files"] = [
        {"path": None, "payload_bytes": 500},
        {"path": "weights-second.bin", "payload_bytes": 780},
        {"path": "optional.bin", "payload_bytes": 64},
    ]
    return doc


def sharded_payload(doc: dict[str, Any]) -> bytes:
    """Zeros, with the tiny file's bf16 words at 0 and 2.0 at 1024 and 40 bytes of text."""
    blob = bytearray(1344)
    blob[0:8] = TINY_PAYLOAD[:8]
    blob[1024:1028] = bytes.fromhex("00000040")
    blob[1250:1290] = b"the C++ fixture's straddling resource..."
    return bytes(blob)


def encode(doc: Any) -> bytes:
    """Compact JSON; ASCII escapes so any code point is writable."""
    return json.dumps(doc, separators=(",", ":")).encode("ascii")


@dataclass(frozen=True, slots=True)
class SetSpec:
    """How to frame one file set by hand (spec/ninfer3.md §entry-header, §volume-header)."""

    text: bytes  # the JSON text, before padding
    payload: bytes  # the logical payload
    # None: pad with spaces to the next 4096 boundary (spec/ninfer3.md §writer)
    json_bytes: int | None = None
    fill: bytes = b" "  # what pads the JSON up to json_bytes
    artifact_id: bytes = FIXED_ID
    sizes: tuple[int, ...] | None = None  # files[i].payload_bytes; None: from the JSON
    names: tuple[str, ...] | None = None  # continuation names; None: from the JSON


def tiny_set(doc: dict[str, Any] | None = None, **kw: Any) -> SetSpec:
    return SetSpec(encode(tiny_doc() if doc is None else doc), TINY_PAYLOAD, **kw)


def sharded_set(doc: dict[str, Any] | None = None, **kw: Any) -> SetSpec:
    doc = sharded_doc() if doc is None else doc
    text = encode(doc)
    kw.setdefault("json_bytes", len(text))  # the fixture's raw length
    return SetSpec(text, sharded_payload(doc), **kw)


def edited(base: dict[str, Any], *edits: Any) -> dict[str, Any]:
    """A deep copy of `base` after each edit(doc) has run."""
    doc = copy.deepcopy(base)
    for edit in edits:
        edit(doc)
    return doc


def write_set(folder: Path, spec: SetSpec) -> list[Path]:
    """Write the entry `model.ninfer` and its continuation volumes into `folder`."""
    if spec.sizes is not None and spec.names is not None:
        sizes, names = list(spec.sizes), list(spec.names)
    else:
        files = json.loads(spec.text)["files"]
        sizes = [f["payload_bytes"] for f in files]
        names = [f["path"] for f in files[1:]]
    json_bytes = spec.json_bytes
    if json_bytes is None:
        json_bytes = entry_payload_start(len(spec.text)) - 32
    text = spec.text + spec.fill * (json_bytes - len(spec.text))
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    paths = [folder / ENTRY_NAME] + [folder / n for n in names]
    for i, path in enumerate(paths):
        if i == 0:
            head = build_entry_header(json_bytes, spec.artifact_id) + text
            start = entry_payload_start(json_bytes)
        else:
            head, start = build_continuation_header(i, spec.artifact_id), PART_PAYLOAD_START
        body = spec.payload[starts[i] : starts[i] + sizes[i]]
        path.write_bytes(head + bytes(start - len(head)) + body.ljust(sizes[i], b"\0"))
    return paths


def patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def resize(path: Path, size: int) -> None:
    os.truncate(path, size)
