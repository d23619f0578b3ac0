"""The `.ninfer` v3 mutation table: for every rule a file set can break (spec/ninfer3/rules.py), a
writer of the spec/ninfer3.md §framing-numbers tiny file (or the C++ sharded fixture) with that one
rule broken.

Rules a file cannot break on its own are left out, and conformance/README.md lists them: a range
read past the payload and a lookup of an absent object (requests, not files), the architecture
binder's checks (they need a model's parameter list) and the writer's own rules.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from weightfile.spec.ninfer3.domains import U64_MAX

from .ninfer3_files import (
    ENTRY_NAME,
    SetSpec,
    edited,
    encode,
    patch,
    resize,
    sharded_set,
    tiny_doc,
    tiny_set,
    write_set,
)

Mutation = Callable[[Path], Any]


def tiny(*edits: Callable[[dict[str, Any]], Any]) -> Mutation:
    """The tiny file with its directory edited."""
    return lambda folder: write_set(folder, tiny_set(edited(tiny_doc(), *edits)))


def tiny_text(change: Callable[[bytes], bytes]) -> Mutation:
    """The tiny file with its JSON text edited as bytes (for what a JSON library cannot write)."""
    return lambda folder: write_set(
        folder, SetSpec(change(encode(tiny_doc())), tiny_set().payload, sizes=(265,), names=())
    )


def tiny_entry_only(*edits: Callable[[dict[str, Any]], Any]) -> Mutation:
    """The tiny file with an edited file table; only the entry is written (its 265 bytes)."""
    return lambda folder: write_set(
        folder, tiny_set(edited(tiny_doc(), *edits), sizes=(265,), names=())
    )


def two_files(path: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["files"] = [{"path": None, "payload_bytes": 265}, {"path": path, "payload_bytes": 1}]

    return edit


def tiny_then(action: Callable[[Path], Any]) -> Mutation:
    """The valid tiny file, then a byte-level change to the entry."""

    def run(folder: Path) -> None:
        write_set(folder, tiny_set())
        action(folder / ENTRY_NAME)

    return run


def sharded_then(action: Callable[[Path], Any]) -> Mutation:
    """The valid sharded fixture, then a change to its file set."""

    def run(folder: Path) -> None:
        write_set(folder, sharded_set())
        action(folder)

    return run


def obj(i: int, **fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["objects"][i].update(fields)


def text(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["components"]["text"].update(fields)


def bind(name: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["bindings"].update({name: value})


def use(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["uses"][0].update(fields)


def huge_parts(d: dict[str, Any]) -> None:
    """Two parts of 2^63 elements each: the running total passes 2^64 - 1 (spec/ninfer3.md
    §binding)."""
    part = {"object": "w.huge", "range": [0, 2**63]}
    d["objects"][1].update(id="w.huge", shape=[2**63, 1])  # shapes are opaque at open time
    d["bindings"] = {"p.x": {"parts": [part, part]}}
    d["uses"] = []


def files_total(d: dict[str, Any]) -> None:
    d["files"] = [
        {"path": None, "payload_bytes": 265},
        {"path": "p1", "payload_bytes": U64_MAX - 265},
        {"path": "p2", "payload_bytes": 1},
    ]


def repeated_paths(d: dict[str, Any]) -> None:
    d["files"] = [{"path": None, "payload_bytes": 225}] + [
        {"path": "p", "payload_bytes": 20} for _ in range(2)
    ]


def drop(folder: Path) -> None:
    (folder / "optional.bin").unlink()


#: rule id -> (what the case does, how to write it)
CASES: dict[str, tuple[str, Mutation]] = {
    # -- framing (spec/ninfer3.md §header-checks)
    # -------------------------------------------------------------------------
    "ninfer3.header.truncated": ("an entry of 31 bytes", tiny_then(lambda p: resize(p, 31))),
    "ninfer3.header.magic": (
        "the v2 magic NINFER\\0\\2",
        tiny_then(lambda p: patch(p, 0, b"NINFER\x00\x02")),
    ),
    "ninfer3.header.json_bytes": (
        "json_bytes 0",
        tiny_then(lambda p: patch(p, 8, bytes(8))),
    ),
    "ninfer3.json.bom": ("the JSON starts with EF BB BF", tiny_text(lambda t: b"\xef\xbb\xbf" + t)),
    "ninfer3.json.utf8": (
        "a raw 0xFF byte inside metadata.name",
        tiny_text(lambda t: t.replace(b'"tiny"', b'"ti\xffy"')),
    ),
    "ninfer3.json.syntax": ("a trailing comma", tiny_text(lambda t: t[:-1] + b",}")),
    "ninfer3.json.duplicate_member": (
        "provenance twice in the root object",
        tiny_text(lambda t: t[:-1] + b',"provenance":{}}'),
    ),
    "ninfer3.json.non_finite": (
        "a NaN literal in the text component's config",
        tiny_text(lambda t: t.replace(b'"config":{}', b'"config":{"x":NaN}')),
    ),
    # -- records and value domains (spec/ninfer3.md §general, §closed-sets)
    # -------------------------------------------------
    "ninfer3.record.type": ("objects is an object", tiny(lambda d: d.update(objects={}))),
    "ninfer3.record.members": ("an unlisted root member", tiny(lambda d: d.update(extra=1))),
    "ninfer3.value.id": ("an empty object id", tiny(obj(1, id=""))),
    "ninfer3.value.u64": ("offset 256.0", tiny(obj(1, offset=256.0))),
    "ninfer3.value.positive_u64": ("bytes 0", tiny(obj(1, bytes=0))),
    "ninfer3.value.shape": ("a shape dim 0", tiny(obj(0, shape=[0]))),
    # -- files (spec/ninfer3.md §files-table)
    # -------------------------------------------------------------------------
    "ninfer3.files.empty": ("files is []", tiny_entry_only(lambda d: d.update(files=[]))),
    "ninfer3.files.entry_path": (
        "files[0].path names the entry",
        tiny(lambda d: d["files"][0].update(path=ENTRY_NAME)),
    ),
    "ninfer3.files.path": ("continuation path ../other", tiny_entry_only(two_files("../other"))),
    "ninfer3.files.path_unique": ("two continuations named p", tiny_entry_only(repeated_paths)),
    "ninfer3.files.path_entry": (
        "a continuation named as the entry",
        tiny_entry_only(two_files(ENTRY_NAME)),
    ),
    "ninfer3.files.total": ("payload_bytes sum to 2^64", tiny_entry_only(files_total)),
    # -- objects (spec/ninfer3.md §objects)
    # -----------------------------------------------------------------------
    "ninfer3.objects.empty": (
        "objects is [] (and nothing refers to one)",
        tiny(
            lambda d: d.update(objects=[], bindings={}, uses=[]),
            text(resources={}),
        ),
    ),
    "ninfer3.objects.kind": ("kind weights", tiny(obj(0, kind="weights"))),
    "ninfer3.objects.end_overflow": ("offset 2^64 - 3", tiny(obj(2, offset=U64_MAX - 2))),
    "ninfer3.objects.order": ("r.hello moved to 259", tiny(obj(2, offset=259))),
    "ninfer3.objects.bounds": ("r.hello is 6 bytes", tiny(obj(2, bytes=6))),
    "ninfer3.objects.id_unique": (
        "r.hello renamed w.bf16",
        tiny(obj(2, id="w.bf16"), text(resources={})),
    ),
    # -- components (spec/ninfer3.md §component)
    # --------------------------------------------------------------------
    "ninfer3.components.text": (
        "the text component renamed main",
        tiny(lambda d: d.update(components={"main": d["components"]["text"]})),
    ),
    "ninfer3.components.target": (
        "a component targets x",
        tiny(lambda d: d["components"].update(mtp={"config": {}, "target": "x"})),
    ),
    "ninfer3.components.resource_ref": (
        "a resource role names a tensor",
        tiny(text(resources={"tokenizer.json": "w.bf16"})),
    ),
    "ninfer3.components.proposal_component": (
        "a proposal on a vision component",
        tiny(
            lambda d: d["components"].update(
                vision={"config": {}, "target": "text", "proposal": {"domain": "full"}}
            )
        ),
    ),
    "ninfer3.components.proposal_domain": (
        "a full-domain proposal with rows",
        tiny(text(proposal={"domain": "full", "rows": 3})),
    ),
    # -- bindings (spec/ninfer3.md §binding)
    # ----------------------------------------------------------------------
    "ninfer3.bindings.form": ("a binding {}", tiny(bind("p.x", {}))),
    "ninfer3.bindings.parts_empty": ("parts []", tiny(bind("p.x", {"parts": []}))),
    "ninfer3.bindings.object_ref": ("a binding to w.none", tiny(bind("p.x", {"object": "w.none"}))),
    "ninfer3.bindings.object_kind": (
        "a binding to a resource",
        tiny(bind("p.x", {"object": "r.hello"})),
    ),
    "ninfer3.bindings.range_form": (
        "range [0]",
        tiny(bind("p.x", {"parts": [{"object": "w.bf16", "range": [0]}]})),
    ),
    "ninfer3.bindings.range": (
        "range [0, 5] of a 4-element tensor",
        tiny(bind("p.x", {"parts": [{"object": "w.bf16", "range": [0, 5]}]})),
    ),
    "ninfer3.bindings.total": ("two parts of 2^63 elements", tiny(huge_parts)),
    # -- uses (spec/ninfer3.md §use)
    # --------------------------------------------------------------------------
    "ninfer3.uses.parameter": ("a use of p.absent", tiny(use(parameter="p.absent"))),
    "ninfer3.uses.unique": (
        "the same use twice",
        tiny(lambda d: d["uses"].append(dict(d["uses"][0]))),
    ),
    "ninfer3.uses.policy": ("activation_policy a16only", tiny(use(activation_policy="a16only"))),
    # -- entry length (spec/ninfer3.md §header-checks step 5)
    # -----------------------------------------------------------
    "ninfer3.entry.length": ("the entry one byte short", tiny_then(lambda p: resize(p, 4360))),
    # -- continuation volumes (spec/ninfer3.md §header-checks step 6)
    # ---------------------------------------------------
    "ninfer3.part.missing": ("optional.bin is absent", sharded_then(drop)),
    "ninfer3.part.truncated": (
        "optional.bin is 31 bytes",
        sharded_then(lambda f: resize(f / "optional.bin", 31)),
    ),
    "ninfer3.part.magic": (
        "optional.bin has the entry magic",
        sharded_then(lambda f: patch(f / "optional.bin", 0, b"NINFER\x00\x03")),
    ),
    "ninfer3.part.index": (
        "optional.bin says part 1",
        sharded_then(lambda f: patch(f / "optional.bin", 8, (1).to_bytes(8, "little"))),
    ),
    "ninfer3.part.artifact_id": (
        "optional.bin has another artifact id",
        sharded_then(lambda f: patch(f / "optional.bin", 16, bytes(16))),
    ),
    "ninfer3.part.length": (
        "weights-second.bin one byte too long",
        sharded_then(lambda f: resize(f / "weights-second.bin", 4096 + 781)),
    ),
    # -- deferred object checks (spec/ninfer3.md §validation, §layout-registry)
    # --------------------------------------------------
    "ninfer3.object.format": ("format bf17", tiny(obj(0, format="bf17"))),
    "ninfer3.object.layout": ("layout contiguous_be_v1", tiny(obj(0, layout="contiguous_be_v1"))),
    "ninfer3.object.layout_accepts": (
        "bf16 in row_split_k128_v1",
        tiny(obj(0, layout="row_split_k128_v1")),
    ),
    "ninfer3.object.shape": (
        "q4_g64_fp16 row_split_k128_v1 of rank 1",
        tiny(obj(0, format="q4_g64_fp16", layout="row_split_k128_v1")),
    ),
    "ninfer3.object.bytes": ("w.bf16 is 6 bytes", tiny(obj(0, bytes=6))),
    "ninfer3.object.offset_alignment": ("w.scalar at 252", tiny(obj(1, offset=252))),
    "ninfer3.object.encoding": ("encoding gzip", tiny(obj(2, encoding="gzip"))),
}
