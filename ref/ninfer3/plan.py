"""Writer planning: object placement and the sharded files table (spec/ninfer3.md §writer,
§json-serialisation).

`plan_objects` places objects in the given order (tensors at their layout alignment, 256;
resources at alignment 1); `layout_directory` picks the JSON reserve and splits the logical
payload into files under the size limit, repeating until the JSON fits its reserve.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from weightfile.ref.ninfer3.objects import encoded_tensor_bytes
from weightfile.ref.ninfer3.require import fail, require
from weightfile.spec.errors import MalformedError
from weightfile.spec.ninfer3.directory import (
    RESOURCE_EMIT_ORDER,
    ROOT_EMIT_ORDER,
    TENSOR_EMIT_ORDER,
)
from weightfile.spec.ninfer3.domains import U64_MAX
from weightfile.spec.ninfer3.framing import (
    DEFAULT_LIMIT,
    HEADER_BYTES,
    PART_PAYLOAD_START,
    PAYLOAD_ALIGNMENT,
    align_up,
)
from weightfile.spec.ninfer3.registry import ENCODINGS, LAYOUTS


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor to place: its bytes are encoded_size(layout, format, shape)."""

    id: str
    shape: tuple[int, ...]
    format: str
    layout: str


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource to place: `size` raw bytes."""

    id: str
    size: int
    encoding: str = "raw_bytes_v1"


ObjectSpec = TensorSpec | ResourceSpec


def plan_objects(specs: Sequence[ObjectSpec]) -> list[dict[str, Any]]:
    """Object descriptors in order, each at align_up(cursor, alignment) (spec/ninfer3.md
    §writer)."""
    require(len(specs) > 0, "ninfer3.writer.objects", "no objects to write", "objects")
    seen: set[str] = set()
    cursor = 0
    out = []
    for i, spec in enumerate(specs):
        path = f"objects[{i}]"
        require(spec.id not in seen, "ninfer3.writer.objects", f"id {spec.id!r} repeats", path)
        seen.add(spec.id)
        if isinstance(spec, TensorSpec):
            size = encoded_tensor_bytes(spec.format, spec.layout, spec.shape, path)
            offset = align_up(cursor, LAYOUTS[spec.layout].alignment)
            fields = {"shape": list(spec.shape), "format": spec.format, "layout": spec.layout}
            order, kind = TENSOR_EMIT_ORDER, "tensor"
        else:
            require(spec.encoding in ENCODINGS, "ninfer3.object.encoding", spec.encoding, path)
            require(spec.size >= 1, "ninfer3.writer.objects", "resource has no bytes", path)
            size, offset = spec.size, align_up(cursor, ENCODINGS[spec.encoding].alignment)
            fields, order, kind = {"encoding": spec.encoding}, RESOURCE_EMIT_ORDER, "resource"
        fields |= {"id": spec.id, "offset": offset, "bytes": size, "kind": kind}
        out.append({k: fields[k] for k in order})
        cursor = offset + size
    return out


def encode_json(root: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, no BOM, literal non-ASCII, NaN/Infinity refused
    (spec/ninfer3.md §json-serialisation)."""
    try:
        text = json.dumps(root, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # NaN or ±Infinity somewhere in config/metadata/provenance
        raise MalformedError("ninfer3.json.non_finite", str(exc)) from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate cannot be UTF-8
        raise MalformedError("ninfer3.json.utf8", "lone surrogate in the directory") from exc


def reserve_for(length: int) -> int:
    """R = align_up(32 + length, 4096) − 32: JSON room ending at a 4096 boundary
    (spec/ninfer3.md §writer)."""
    return align_up(HEADER_BYTES + length, PAYLOAD_ALIGNMENT) - HEADER_BYTES


def split_payload(
    payload_bytes: int, entry_start: int, limit: int, entry_name: str
) -> list[dict[str, Any]]:
    """The files table for one reserve: a single file, or entry + part capacities
    (spec/ninfer3.md §writer)."""
    require(payload_bytes <= U64_MAX, "ninfer3.files.total", "payload exceeds 2^64-1")
    require(entry_start < limit, "ninfer3.writer.limit", f"limit {limit} <= header + JSON")
    if entry_start + payload_bytes <= limit:
        return [{"path": None, "payload_bytes": payload_bytes}]
    entry_capacity = (limit - entry_start) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT
    part_capacity = (limit - PART_PAYLOAD_START) // PAYLOAD_ALIGNMENT * PAYLOAD_ALIGNMENT
    if entry_capacity <= 0 or part_capacity <= 0:
        fail("ninfer3.writer.limit", f"limit {limit} leaves no room for payload")
    files: list[dict[str, Any]] = [{"path": None, "payload_bytes": entry_capacity}]
    remaining = payload_bytes - entry_capacity
    while remaining > 0:
        size = min(remaining, part_capacity)
        files.append({"path": part_name(entry_name, len(files)), "payload_bytes": size})
        remaining -= size
    return files


def part_name(entry_name: str, index: int) -> str:
    """``<entry file name>.part-NNNN``, at least four digits (spec/ninfer3.md §writer)."""
    return f"{entry_name}.part-{index:04d}"


def layout_directory(
    root: dict[str, Any],
    payload_bytes: int,
    entry_name: str,
    limit: int = DEFAULT_LIMIT,
    min_json_bytes: int = 1,
) -> tuple[bytes, list[dict[str, Any]]]:
    """(JSON text padded with spaces to json_bytes, files table) for `root` without files
    (spec/ninfer3.md §writer).

    `min_json_bytes` reserves at least that much JSON room (the spec/ninfer3.md §examples examples
    use 65,504).
    """
    draft = {**root, "files": [{"path": None, "payload_bytes": payload_bytes}]}
    reserve = max(reserve_for(len(encode_json(_ordered(draft)))), reserve_for(min_json_bytes))
    while True:
        files = split_payload(payload_bytes, HEADER_BYTES + reserve, limit, entry_name)
        text = encode_json(_ordered({**root, "files": files}))
        if len(text) <= reserve:
            return text + b" " * (reserve - len(text)), files
        reserve = reserve_for(len(text))


def _ordered(root: dict[str, Any]) -> dict[str, Any]:
    """Root members in the reference writer's emit order; metadata/provenance default {}."""
    full = {"metadata": {}, "provenance": {}, **root}
    return {k: full[k] for k in ROOT_EMIT_ORDER}
