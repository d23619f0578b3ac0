"""Open-time directory checks, in the order of spec/ninfer3.md §validation steps 2-8.

`validate_directory` walks root → files → objects → components → bindings → uses →
metadata/provenance and stops at the first broken rule, naming its JSON path. The entry
length (step 9) needs the file size and is checked by `read.py`.

With a sink, `walk_directory` makes the same checks in the same order for `verify`, but a
broken record does not end the walk: its violation is recorded, the record is left out and the
next one is checked (spec/ninfer3.md §validation). The walk ends early only where the rest depends
on what broke: after the root record, the files table (objects are bounded by the payload it
declares) or the objects table (every later member refers to objects). A use naming a binding
that broke is not reported again: the binding's own violation already says what is wrong.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from weightfile.ref.ninfer3.records import (
    Binding,
    Component,
    Directory,
    FileEntry,
    ObjectEntry,
    Proposal,
    member_path,
)
from weightfile.ref.ninfer3.references import check_bindings, check_resources, check_uses
from weightfile.ref.ninfer3.require import (
    Sink,
    attempt,
    fail,
    need_id,
    need_members,
    need_positive_u64,
    need_shape,
    need_type,
    need_u64,
    require,
)
from weightfile.spec.ninfer3.directory import (
    COMPONENT,
    FILE,
    OBJECT_KINDS,
    PROPOSAL,
    PROPOSAL_DOMAINS,
    ROOT,
    TEXT_COMPONENT,
)
from weightfile.spec.ninfer3.domains import U64_MAX

ROOT_PATH = "(root)"


def validate_directory(doc: Any, entry_name: str) -> Directory:
    """Every open-time directory rule of spec/ninfer3.md §validation steps 2-8, in order; the first
    broken one raises."""
    directory = walk_directory(doc, entry_name, None)
    assert directory is not None  # without a sink every failure raises
    return directory


def walk_directory(doc: Any, entry_name: str, sink: Sink) -> Directory | None:
    """The spec/ninfer3.md §validation walk; with a sink, independent records are checked past a
    failure, and None is returned when the walk had to stop (module docstring)."""
    root = attempt(sink, need_members, doc, ROOT, ROOT_PATH)
    if root is None:
        return None
    files = attempt(sink, check_files, root["files"], entry_name)
    if files is None:
        return None
    objects = check_objects(root["objects"], files[-1].logical_end, sink)
    if objects is None:
        return None
    by_id = {o.id: o for o in objects}
    components = check_components(root["components"], by_id, sink)
    bindings: dict[str, Binding] = check_bindings(root["bindings"], by_id, sink)
    if sink is None or isinstance(root["bindings"], dict):
        bound: Collection[str] = bindings if sink is None else set(root["bindings"])
        uses = check_uses(root["uses"], bound, by_id, sink)
    else:
        uses = ()  # no parameter name is known, so no use can be checked
    checked = attempt(sink, check_metadata, root.get("metadata", {}), root.get("provenance", {}))
    metadata, provenance = checked or ({}, {})
    return Directory(files, objects, by_id, components, bindings, uses, metadata, provenance)


# -- spec/ninfer3.md §files-table files
# ------------------------------------------------------------------------------


def check_files(value: Any, entry_name: str) -> tuple[FileEntry, ...]:
    """The files table (spec/ninfer3.md §files-table): entry first, then continuation volumes with
    unique safe paths."""
    need_type(value, list, "files")
    require(len(value) > 0, "ninfer3.files.empty", "files is empty", "files")
    entries: list[FileEntry] = []
    seen: set[str] = set()
    total = 0
    for i, record in enumerate(value):
        path = f"files[{i}]"
        need_members(record, FILE, path)
        name = check_file_path(record["path"], i, entry_name, seen, f"{path}.path")
        size = need_positive_u64(record["payload_bytes"], f"{path}.payload_bytes")
        require(total + size <= U64_MAX, "ninfer3.files.total", "total exceeds 2^64-1", path)
        entries.append(FileEntry(i, name, size, total))
        total += size
    return tuple(entries)


def check_file_path(
    value: Any, index: int, entry_name: str, seen: set[str], path: str
) -> str | None:
    """files[0].path is null; files[i≥1].path is a safe, unique name other than the entry's."""
    if index == 0:
        require(value is None, "ninfer3.files.entry_path", "entry path must be null", path)
        return None
    name = need_id(value, path)
    require(
        "/" not in name and "\\" not in name and name not in (".", ".."),
        "ninfer3.files.path",
        f"path {name!r} is not a plain file name",
        path,
    )
    require(name not in seen, "ninfer3.files.path_unique", f"path {name!r} repeats", path)
    require(name != entry_name, "ninfer3.files.path_entry", "path names the entry file", path)
    seen.add(name)
    return name


# -- spec/ninfer3.md §objects objects
# ----------------------------------------------------------------------------


def check_objects(
    value: Any, payload_bytes: int, sink: Sink = None
) -> tuple[ObjectEntry, ...] | None:
    """Objects in increasing-offset order, inside the payload, with unique ids
    (spec/ninfer3.md §objects).

    With a sink: every record is checked, and None is returned when any broke."""
    before = len(sink) if sink is not None else 0
    if attempt(sink, _objects_array, value) is None:
        return None
    objects: list[ObjectEntry] = []
    ids: set[str] = set()
    for i, record in enumerate(value):
        prev_end = objects[-1].end if objects else 0
        entry = attempt(sink, check_object_record, record, i, prev_end, payload_bytes, ids)
        if entry is not None:
            ids.add(entry.id)
            objects.append(entry)
    if sink is not None and len(sink) > before:
        return None
    return tuple(objects)


def _objects_array(value: Any) -> list[Any]:
    need_type(value, list, "objects")
    require(len(value) > 0, "ninfer3.objects.empty", "objects is empty", "objects")
    return value


def check_object_record(
    record: Any, index: int, prev_end: int, payload_bytes: int, ids: set[str]
) -> ObjectEntry:
    """One object: its descriptor, then order, bounds and id uniqueness (spec/ninfer3.md
    §objects)."""
    entry = check_object_descriptor(record, index)
    path = entry.path
    require(entry.end <= U64_MAX, "ninfer3.objects.end_overflow", "end exceeds 2^64-1", path)
    require(
        entry.offset >= prev_end,
        "ninfer3.objects.order",
        f"offset {entry.offset} is below the previous end {prev_end}",
        f"{path}.offset",
    )
    require(
        entry.end <= payload_bytes,
        "ninfer3.objects.bounds",
        f"ends at {entry.end}, past the payload's {payload_bytes} bytes",
        path,
    )
    require(entry.id not in ids, "ninfer3.objects.id_unique", f"id {entry.id!r}", path)
    return entry


def check_object_descriptor(record: Any, index: int) -> ObjectEntry:
    """One tensor or resource descriptor: kind, closed member set, member domains
    (spec/ninfer3.md §objects)."""
    path = f"objects[{index}]"
    need_type(record, dict, path)
    kind = record.get("kind")
    if type(kind) is not str or kind not in OBJECT_KINDS:
        fail("ninfer3.objects.kind", f"kind {kind!r:.40} is not tensor/resource", f"{path}.kind")
    need_members(record, OBJECT_KINDS[kind], path)
    object_id = need_id(record["id"], f"{path}.id")
    offset = need_u64(record["offset"], f"{path}.offset")
    size = need_positive_u64(record["bytes"], f"{path}.bytes")
    if kind == "resource":
        encoding = need_id(record["encoding"], f"{path}.encoding")
        return ObjectEntry(index, object_id, kind, offset, size, encoding=encoding)
    shape = tuple(need_shape(record["shape"], f"{path}.shape"))
    fmt = need_id(record["format"], f"{path}.format")
    layout = need_id(record["layout"], f"{path}.layout")
    return ObjectEntry(index, object_id, kind, offset, size, shape, fmt, layout)


# -- spec/ninfer3.md §component components
# -------------------------------------------------------------------------


def check_components(
    value: Any, objects: dict[str, ObjectEntry], sink: Sink = None
) -> dict[str, Component]:
    """components: has text; closed records; targets exist; resources; proposal rules
    (spec/ninfer3.md §component)."""
    if attempt(sink, _components_object, value) is None:
        return {}
    out: dict[str, Component] = {}
    for cid, record in value.items():
        component = attempt(sink, check_component, cid, record, value, objects)
        if component is not None:
            out[cid] = component
    return out


def _components_object(value: Any) -> dict[str, Any]:
    need_type(value, dict, "components")
    require(TEXT_COMPONENT in value, "ninfer3.components.text", "no text component", "components")
    return value


def check_component(
    cid: Any, record: Any, siblings: dict[str, Any], objects: dict[str, ObjectEntry]
) -> Component:
    """One component record: closed members, target, resources and proposal
    (spec/ninfer3.md §component)."""
    path = member_path("components", cid)
    need_id(cid, path)
    need_members(record, COMPONENT, path)
    config = need_type(record["config"], dict, f"{path}.config")
    target = None
    if "target" in record:
        target = need_id(record["target"], f"{path}.target")
        require(
            target in siblings,
            "ninfer3.components.target",
            f"target {target!r} is not a component",
            f"{path}.target",
        )
    resources = check_resources(record.get("resources", {}), objects, f"{path}.resources")
    proposal = None
    if "proposal" in record:
        proposal = check_proposal(record["proposal"], cid, f"{path}.proposal")
    return Component(cid, config, target, resources, proposal)


def check_proposal(value: Any, component_id: str, path: str) -> Proposal:
    """proposal: text only; domain full (no rows) or indexed (PositiveU64 rows)
    (spec/ninfer3.md §component)."""
    require(
        component_id == TEXT_COMPONENT,
        "ninfer3.components.proposal_component",
        f"proposal on component {component_id!r}",
        path,
    )
    need_members(value, PROPOSAL, path)
    domain = value["domain"]
    if type(domain) is not str or domain not in PROPOSAL_DOMAINS:
        fail("ninfer3.components.proposal_domain", f"domain {domain!r:.40}", f"{path}.domain")
    if domain == "full":
        require(
            "rows" not in value,
            "ninfer3.components.proposal_domain",
            "full domain takes no rows",
            f"{path}.rows",
        )
        return Proposal(domain, None)
    require("rows" in value, "ninfer3.components.proposal_domain", "indexed needs rows", path)
    return Proposal(domain, need_positive_u64(value["rows"], f"{path}.rows"))


# -- spec/ninfer3.md §metadata metadata and provenance
# ------------------------------------------------------------


def check_metadata(metadata: Any, provenance: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both are objects; metadata.name, when present, is an ID (spec/ninfer3.md §metadata)."""
    need_type(metadata, dict, "metadata")
    need_type(provenance, dict, "provenance")
    if "name" in metadata:
        need_id(metadata["name"], "metadata.name")
    return metadata, provenance
