"""What `weightfile inspect` and `weightfile verify` show for a `.ninfer` v3 file (spec/ninfer3.md).

`describe` returns a JSON-serialisable description (header, file set, components, objects with
the files they span, bindings, uses, metadata; `weightfile inspect` renders it as tables); `verify`
lists every violation: a framing or JSON failure alone, else every broken directory rule, and
for a file set that opens, every object's deferred checks and every continuation volume.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from weightfile.ref.ninfer3.objects import check_object
from weightfile.ref.ninfer3.read import Artifact, open_artifact, open_for_verify
from weightfile.ref.ninfer3.records import Binding
from weightfile.ref.ninfer3.require import attempt
from weightfile.spec.errors import Violation
from weightfile.spec.ninfer3.framing import ENTRY_MAGIC, entry_payload_start


def describe(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON-serialisable description of the file set (raises on open-time errors)."""
    with open_artifact(path) as artifact:
        return _describe(artifact)


def _describe(artifact: Artifact) -> dict[str, Any]:
    d = artifact.directory
    files = _files(artifact)
    declared = sum(f["file_bytes"] for f in files)
    return {
        "format": "ninfer3",
        "path": str(artifact.path),
        "header": {
            "magic": ENTRY_MAGIC.hex(),
            "version": 3,
            "json_bytes": artifact.header.json_bytes,
            "artifact_id": artifact.header.artifact_id.hex(),
            "entry_payload_start": entry_payload_start(artifact.header.json_bytes),
        },
        "payload_bytes": d.payload_bytes,
        "file_bytes": declared,
        "files": files,
        "components": [
            {
                "id": c.id,
                "target": c.target,
                "config": c.config,
                "resources": c.resources,
                "proposal": None if c.proposal is None else vars_of(c.proposal),
            }
            for c in d.components.values()
        ],
        "objects": [
            {
                "id": o.id,
                "kind": o.kind,
                "format": o.format,
                "layout": o.layout,
                "encoding": o.encoding,
                "shape": None if o.shape is None else list(o.shape),
                "offset": o.offset,
                "bytes": o.bytes,
                "files": spanned_files(artifact, o.offset, o.bytes),
            }
            for o in d.objects
        ],
        "bindings": [_binding(name, b) for name, b in d.bindings.items()],
        "uses": [
            {
                "parameter": u.parameter,
                "input": u.input,
                "activation_policy": u.activation_policy,
                "auxiliaries": {r: _binding(r, b) for r, b in u.auxiliaries.items()},
            }
            for u in d.uses
        ],
        "metadata": d.metadata,
        "provenance": d.provenance,
    }


def vars_of(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__slots__}


def spanned_files(artifact: Artifact, offset: int, length: int) -> list[int]:
    """Indices of the files holding logical bytes [offset, offset+length) (spec/ninfer3.md
    §range-reads)."""
    return [segment[0] for segment in artifact.files.segments(offset, length)]


def _size_or_none(where: Path) -> int | None:
    """The size of a volume, or None when it cannot be looked at: absent, or a name the system
    refuses (longer than NAME_MAX: ENAMETOOLONG), which `verify` reports as the violation."""
    try:
        return os.stat(where).st_size
    except OSError:
        return None


def _files(artifact: Artifact) -> list[dict[str, Any]]:
    out = []
    for f in artifact.files.files:
        where = artifact.files.volume_path(f.index)
        actual = _size_or_none(where)
        out.append(
            {
                "index": f.index,
                "path": f.path,
                "name": where.name,
                "payload_bytes": f.payload_bytes,
                "logical_start": f.logical_start,
                "logical_end": f.logical_end,
                "file_bytes": artifact.files.file_bytes(f.index),
                "actual_bytes": actual,
            }
        )
    return out


def _binding(name: str, binding: Binding) -> dict[str, Any]:
    if binding.object_id is not None:
        return {"name": name, "object": binding.object_id}
    assert binding.parts is not None
    parts = [{"object": p.object_id, "range": [p.begin, p.end]} for p in binding.parts]
    return {"name": name, "parts": parts}


# -- verification ------------------------------------------------------------------------------


def verify(path: str | os.PathLike[str]) -> list[Violation]:
    """Every violation, in the reader's order: a framing or JSON failure alone; else every
    broken directory, binding and use rule and the entry length; and when the open-time
    checks all hold, every deferred object check and every continuation volume's header and
    length (they are the checks of a file that opens). Empty when the file set is valid."""
    found: list[Violation] = []
    artifact = open_for_verify(path, found)
    if artifact is None:
        return found
    with artifact:
        if found:
            return found
        for entry in artifact.directory.objects:
            attempt(found, check_object, entry)
        for index in range(1, len(artifact.directory.files)):
            attempt(found, artifact.files.volume, index)
    return found
