"""The conformance description of a valid `.ninfer` v3 file set (conformance/README.md).

As for VQF, every value is a JSON string: integers in decimal, the artifact id and digests as
lowercase hex. Each object's bytes are given as the SHA-256 of its logical payload bytes [offset,
offset + bytes), read across continuation volumes as spec/ninfer3.md §range-reads maps them; the
directory parts are the ones of spec/ninfer3.md §files-table (files), spec/ninfer3.md §component
(components), spec/ninfer3.md §objects (objects), spec/ninfer3.md §binding (bindings) and
spec/ninfer3.md §use (uses). Component configs, metadata and provenance are free JSON and are not
described (an implementation need not agree with us on how to print a float).
"""

from __future__ import annotations

import hashlib
from typing import Any

from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.records import Binding
from weightfile.spec.ninfer3.framing import entry_payload_start


def binding_value(binding: Binding) -> dict[str, Any]:
    """A whole binding {object} or a parts binding {parts: [{object, range: [b, e]}]}
    (spec/ninfer3.md §binding)."""
    if binding.object_id is not None:
        return {"object": binding.object_id}
    assert binding.parts is not None
    return {
        "parts": [
            {"object": p.object_id, "range": [str(p.begin), str(p.end)]} for p in binding.parts
        ]
    }


def describe_ninfer3(artifact: Artifact) -> dict[str, Any]:
    """What an implementation prints for a valid file set."""
    d = artifact.directory
    objects: list[dict[str, Any]] = []
    for o in d.objects:
        item: dict[str, Any] = {"id": o.id, "kind": o.kind}
        if o.kind == "tensor":
            assert o.shape is not None and o.format is not None and o.layout is not None
            item |= {"format": o.format, "layout": o.layout, "shape": [str(n) for n in o.shape]}
        else:
            assert o.encoding is not None
            item["encoding"] = o.encoding
        digest = hashlib.sha256(artifact.read_range(o.offset, o.bytes)).hexdigest()
        item |= {"offset": str(o.offset), "bytes": str(o.bytes), "sha256": digest}
        objects.append(item)
    return {
        "format": "ninfer3",
        "header": {
            "json_bytes": str(artifact.header.json_bytes),
            "artifact_id": artifact.header.artifact_id.hex(),
            "entry_payload_start": str(entry_payload_start(artifact.header.json_bytes)),
        },
        "payload_bytes": str(d.payload_bytes),
        "files": [
            {"index": str(f.index), "path": f.path or "", "payload_bytes": str(f.payload_bytes)}
            for f in d.files
        ],
        "components": [
            {"id": c.id, "target": c.target or "", "resources": dict(c.resources)}
            for c in d.components.values()
        ],
        "objects": objects,
        "bindings": [{"name": name} | binding_value(b) for name, b in d.bindings.items()],
        "uses": [
            {
                "parameter": u.parameter,
                "input": u.input,
                "activation_policy": u.activation_policy or "",
                "auxiliaries": {role: binding_value(b) for role, b in u.auxiliaries.items()},
            }
            for u in d.uses
        ],
    }
