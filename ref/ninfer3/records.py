"""The validated directory as plain records (spec/ninfer3.md §files-table, §root, §component,
§objects, §binding, §use, §metadata).

`ref/ninfer3/directory.py` builds these only after every open-time check holds, so code that
receives a `Directory` may rely on the spec/ninfer3.md §validation open-time rules (not on the
deferred object checks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


def member_path(map_name: str, key: str) -> str:
    """JSON path of an open-map member, e.g. ``bindings["text/final_norm"]``."""
    return f"{map_name}[{json.dumps(key, ensure_ascii=False)}]"


@dataclass(frozen=True, slots=True)
class FileEntry:
    """files[index]: the entry (path None) or a continuation volume, and its logical start P_i."""

    index: int
    path: str | None
    payload_bytes: int
    logical_start: int

    @property
    def logical_end(self) -> int:
        return self.logical_start + self.payload_bytes


@dataclass(frozen=True, slots=True)
class ObjectEntry:
    """objects[index], a tensor (shape/format/layout) or a resource (encoding)."""

    index: int
    id: str
    kind: str
    offset: int
    bytes: int
    shape: tuple[int, ...] | None = None
    format: str | None = None
    layout: str | None = None
    encoding: str | None = None

    @property
    def path(self) -> str:
        return f"objects[{self.index}]"

    @property
    def end(self) -> int:
        return self.offset + self.bytes


@dataclass(frozen=True, slots=True)
class Part:
    """Elements [begin, end) of tensor `object_id`, in the parent's C order
    (spec/ninfer3.md §binding)."""

    object_id: str
    begin: int
    end: int


@dataclass(frozen=True, slots=True)
class Binding:
    """A Binding (spec/ninfer3.md §binding): whole (`object_id`) or parts; `path` is its JSON
    path."""

    path: str
    object_id: str | None = None
    parts: tuple[Part, ...] | None = None


@dataclass(frozen=True, slots=True)
class Use:
    """uses[index] (spec/ninfer3.md §use)."""

    index: int
    parameter: str
    input: str
    activation_policy: str | None
    auxiliaries: dict[str, Binding] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Proposal:
    """components.text.proposal (spec/ninfer3.md §component)."""

    domain: str
    rows: int | None


@dataclass(frozen=True, slots=True)
class Component:
    """components[id] (spec/ninfer3.md §component); `config` is opaque here."""

    id: str
    config: dict[str, Any]
    target: str | None
    resources: dict[str, str]
    proposal: Proposal | None


@dataclass(frozen=True, slots=True)
class Directory:
    """The whole validated directory."""

    files: tuple[FileEntry, ...]
    objects: tuple[ObjectEntry, ...]
    objects_by_id: dict[str, ObjectEntry]
    components: dict[str, Component]
    bindings: dict[str, Binding]
    uses: tuple[Use, ...]
    metadata: dict[str, Any]
    provenance: dict[str, Any]

    @property
    def payload_bytes(self) -> int:
        """Σ files[i].payload_bytes, the logical payload length (spec/ninfer3.md
        §logical-payload)."""
        return self.files[-1].logical_end
