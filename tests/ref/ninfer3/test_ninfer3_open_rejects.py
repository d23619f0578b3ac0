"""Every open-time rejection of spec/ninfer3.md §header-checks and §validation (steps 1-9), one
fault per test.

Each test builds the spec/ninfer3.md §framing-numbers tiny file by hand, breaks one thing, and
asserts the exact error class and rule id; `test_tiny_file_is_valid` is the guard that the unbroken
file opens.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest
from strategies.ninfer3 import (
    ENTRY_MAGIC,
    FIXED_ID,
    TINY_PAYLOAD,
    build_file_set,
    encode,
    mutated,
    patch,
    raises_rule,
    resize,
    sharded_doc,
    tiny_doc,
)

from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.errors import InvalidError, MalformedError
from weightfile.spec.ninfer3.errors import ArtifactError

U64_MAX = 2**64 - 1


def _open(tmp_path: Path, doc_or_text: Any, **kw: Any) -> None:
    (entry, *_) = build_file_set(tmp_path, "tiny.ninfer", doc_or_text, TINY_PAYLOAD, **kw)
    open_artifact(entry).close()


def _open_mutated(tmp_path: Path, fn: Any) -> None:
    _open(tmp_path, mutated(tiny_doc(), fn))


def test_tiny_file_is_valid(tmp_path: Path) -> None:
    """spec/ninfer3.md §framing-numbers hand-made tiny file: json_bytes 4064 (0x0FE0), payload at
    4096, size 4,361."""
    (entry,) = build_file_set(tmp_path, "tiny.ninfer", tiny_doc(), TINY_PAYLOAD)
    assert os.path.getsize(entry) == 4_361
    head = entry.read_bytes()[:32]
    assert head == bytes.fromhex("4e494e4645520003 e00f000000000000") + FIXED_ID
    with open_artifact(entry) as artifact:
        assert artifact.header.json_bytes == 4064
        assert bytes(artifact.object_bytes("w.bf16")) == bytes.fromhex("00000080803fc17f")
        assert bytes(artifact.object_bytes("w.scalar")) == bytes.fromhex("00000040")
        assert bytes(artifact.resource("greeting")) == b"hello"
        assert artifact.activation_divisor(artifact.directory.uses[0]) is None


def test_artifact_error_is_the_hierarchy_root() -> None:
    assert issubclass(ArtifactError, ValueError)
    assert issubclass(InvalidError, ArtifactError) and issubclass(MalformedError, ArtifactError)


# -- step 1: framing --------------------------------------------------------------------------


def test_entry_shorter_than_header(tmp_path: Path) -> None:
    (tmp_path / "t.ninfer").write_bytes(ENTRY_MAGIC + b"\x01")
    with raises_rule(MalformedError, "ninfer3.header.truncated"):
        open_artifact(tmp_path / "t.ninfer")


@pytest.mark.parametrize("magic", ["4e494e4645520002", "4e494e4645520103", "4e494e5052540003"])
def test_bad_magic_including_v2(tmp_path: Path, magic: str) -> None:
    (entry,) = build_file_set(tmp_path, "t.ninfer", tiny_doc(), TINY_PAYLOAD)
    patch(entry, 0, bytes.fromhex(magic))
    with raises_rule(MalformedError, "ninfer3.header.magic") as info:
        open_artifact(entry)
    assert ("v2" in str(info.value)) == magic.endswith("02")


@pytest.mark.parametrize("json_bytes", [0, 4_361 - 32 + 1, U64_MAX])
def test_json_bytes_out_of_range(tmp_path: Path, json_bytes: int) -> None:
    (entry,) = build_file_set(tmp_path, "t.ninfer", tiny_doc(), TINY_PAYLOAD)
    patch(entry, 8, struct.pack("<Q", json_bytes))
    with raises_rule(MalformedError, "ninfer3.header.json_bytes"):
        open_artifact(entry)


def test_bom_before_json(tmp_path: Path) -> None:
    with raises_rule(MalformedError, "ninfer3.json.bom"):
        _open(tmp_path, b"\xef\xbb\xbf" + encode(tiny_doc()))


def test_json_not_utf8(tmp_path: Path) -> None:
    text = encode(tiny_doc()).replace(b'"tiny"', b'"ti\xffy"')
    with raises_rule(MalformedError, "ninfer3.json.utf8"):
        _open(tmp_path, text)


@pytest.mark.parametrize(
    "text",
    [b"{", b"{}x", b"{'a': 1}", b"[1,]", b'{"a":1}\x00\x00'],
    ids=["unclosed", "trailing-garbage", "single-quotes", "trailing-comma", "nul-padding"],
)
def test_json_syntax(tmp_path: Path, text: bytes) -> None:
    with raises_rule(MalformedError, "ninfer3.json.syntax"):
        _open(tmp_path, text, json_bytes=len(text))


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_literal(tmp_path: Path, literal: bytes) -> None:
    text = encode(tiny_doc()).replace(b'"provenance":{}', b'"provenance":{"x":' + literal + b"}")
    with raises_rule(MalformedError, "ninfer3.json.non_finite"):
        _open(tmp_path, text)


@pytest.mark.parametrize(
    "old,new",
    [
        (b'"provenance":{}', b'"provenance":{},"provenance":{}'),
        (b'"config":{}', b'"config":{"a":{"b":1,"b":2}}'),
        (b'"metadata":{"name":"tiny"}', b'"metadata":{"name":"tiny","name":"tiny"}'),
    ],
    ids=["root", "nested-in-config", "metadata"],
)
def test_duplicate_member_at_any_depth(tmp_path: Path, old: bytes, new: bytes) -> None:
    text = encode(tiny_doc())
    assert old in text
    with raises_rule(MalformedError, "ninfer3.json.duplicate_member"):
        _open(tmp_path, text.replace(old, new))


# -- step 2: root member set ------------------------------------------------------------------


def test_root_not_an_object(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.type"):
        _open(tmp_path, b"[1, 2]")


@pytest.mark.parametrize("member", ["uses", "files", "components"])
def test_root_member_missing(tmp_path: Path, member: str) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, lambda d: d.pop(member))


def test_root_member_unlisted(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, lambda d: d.update(extra=1))


def test_metadata_and_provenance_may_be_absent(tmp_path: Path) -> None:
    _open_mutated(tmp_path, lambda d: [d.pop("metadata"), d.pop("provenance")])


# -- step 3: files ----------------------------------------------------------------------------


def test_files_empty(tmp_path: Path) -> None:
    doc = mutated(tiny_doc(), lambda d: d.update(files=[]))
    with raises_rule(InvalidError, "ninfer3.files.empty"):
        _open(tmp_path, doc)


def test_files_not_an_array(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.type"):
        _open(tmp_path, encode(mutated(tiny_doc(), lambda d: d.update(files={}))))


def test_file_record_has_unlisted_member(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, lambda d: d["files"][0].update(sha256="00"))


def test_entry_path_not_null(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.files.entry_path"):
        _open_mutated(tmp_path, lambda d: d["files"][0].update(path="tiny.ninfer"))


def _two_files(path: Any) -> Any:
    def fn(d: dict[str, Any]) -> None:
        d["files"] = [{"path": None, "payload_bytes": 200}, {"path": path, "payload_bytes": 65}]

    return fn


@pytest.mark.parametrize("path", ["../other", "a/b", "a\\b", ".", ".."])
def test_continuation_path_not_a_plain_name(tmp_path: Path, path: str) -> None:
    with raises_rule(InvalidError, "ninfer3.files.path"):
        _open_unbuilt(tmp_path, mutated(tiny_doc(), _two_files(path)))


def _open_unbuilt(tmp_path: Path, doc: dict[str, Any]) -> None:
    """Only the entry is built (continuation names may be unwritable); volumes are lazy."""
    text = encode(doc) + b" " * (4064 - len(encode(doc)))
    entry = tmp_path / "tiny.ninfer"
    entry.write_bytes(ENTRY_MAGIC + struct.pack("<Q", 4064) + FIXED_ID + text)
    resize(entry, 4096 + doc["files"][0]["payload_bytes"])
    open_artifact(entry).close()


@pytest.mark.parametrize("path", ["", "a\x00b", 7, None])
def test_continuation_path_not_an_id(tmp_path: Path, path: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.id"):
        _open_unbuilt(tmp_path, mutated(tiny_doc(), _two_files(path)))


def test_continuation_paths_repeat(tmp_path: Path) -> None:
    def fn(d: dict[str, Any]) -> None:
        d["files"] = [{"path": None, "payload_bytes": 200}] + [
            {"path": "p", "payload_bytes": 40} for _ in range(2)
        ]

    with raises_rule(InvalidError, "ninfer3.files.path_unique"):
        _open_unbuilt(tmp_path, mutated(tiny_doc(), fn))


def test_continuation_path_is_the_entry_name(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.files.path_entry"):
        _open_unbuilt(tmp_path, mutated(tiny_doc(), _two_files("tiny.ninfer")))


def test_continuation_may_use_any_other_name(tmp_path: Path) -> None:
    _open_unbuilt(tmp_path, mutated(tiny_doc(), _two_files("TINY.ninfer")))  # case-sensitive


@pytest.mark.parametrize("value", [0, 1.5, 265.0, True, -1, "265", None])
def test_payload_bytes_not_positive_u64(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.positive_u64"):
        _open_mutated(tmp_path, lambda d: d["files"][0].update(payload_bytes=value))


def test_files_total_exceeds_u64(tmp_path: Path) -> None:
    def fn(d: dict[str, Any]) -> None:
        d["files"] = [
            {"path": None, "payload_bytes": 265},
            {"path": "p1", "payload_bytes": U64_MAX - 265},
            {"path": "p2", "payload_bytes": 1},
        ]

    with raises_rule(InvalidError, "ninfer3.files.total"):
        _open_unbuilt(tmp_path, mutated(tiny_doc(), fn))


# -- step 4: objects --------------------------------------------------------------------------


def _obj(i: int, **fields: Any) -> Any:
    return lambda d: d["objects"][i].update(fields)


def test_objects_empty(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.empty"):
        _open_mutated(
            tmp_path,
            lambda d: [
                d.update(objects=[], bindings={}, uses=[]),
                d["components"]["text"].update(resources={}),
            ],
        )


@pytest.mark.parametrize("kind", ["blob", None, 1, "Tensor"])
def test_object_kind_unknown(tmp_path: Path, kind: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.kind"):
        _open_mutated(tmp_path, _obj(0, kind=kind))


def test_object_kind_missing(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.kind"):
        _open_mutated(tmp_path, lambda d: d["objects"][0].pop("kind"))


@pytest.mark.parametrize(
    "fn",
    [
        _obj(0, encoding="raw_bytes_v1"),
        _obj(2, shape=[5]),
        lambda d: d["objects"][0].pop("layout"),
        lambda d: d["objects"][2].pop("encoding"),
    ],
    ids=["tensor-extra", "resource-extra", "tensor-missing", "resource-missing"],
)
def test_object_member_set(tmp_path: Path, fn: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, fn)


@pytest.mark.parametrize("value", ["", "a\x00", 5, "\ud800"])
def test_object_id_not_an_id(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.id"):
        _open_mutated(tmp_path, _obj(1, id=value))


@pytest.mark.parametrize("member", ["format", "layout"])
def test_tensor_format_or_layout_not_an_id(tmp_path: Path, member: str) -> None:
    with raises_rule(InvalidError, "ninfer3.value.id"):
        _open_mutated(tmp_path, _obj(0, **{member: 16}))


@pytest.mark.parametrize("value", [256.0, -1, True, U64_MAX + 1, "256"])
def test_object_offset_not_u64(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.u64"):
        _open_mutated(tmp_path, _obj(1, offset=value))


@pytest.mark.parametrize("value", [0, 4.0, False])
def test_object_bytes_not_positive(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.positive_u64"):
        _open_mutated(tmp_path, _obj(1, bytes=value))


@pytest.mark.parametrize("shape", [[0], [1] * 17, [2**32, 2**32], [1.0], "4", [True], [-4]])
def test_object_shape_not_a_shape(tmp_path: Path, shape: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.value.shape"):
        _open_mutated(tmp_path, _obj(0, shape=shape))


def test_object_end_overflows_u64(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.end_overflow"):
        _open_mutated(tmp_path, _obj(2, offset=U64_MAX - 2))


def test_object_offset_moved_into_predecessor(tmp_path: Path) -> None:
    """spec/ninfer3.md §validation: two objects' byte ranges overlap -> range error."""
    with raises_rule(InvalidError, "ninfer3.objects.order"):
        _open_mutated(tmp_path, _obj(2, offset=259))


def test_objects_out_of_order(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.order"):
        _open_mutated(tmp_path, lambda d: d["objects"].reverse())


def test_objects_may_be_adjacent_with_gaps_and_trailing_bytes(tmp_path: Path) -> None:
    _open_mutated(tmp_path, _obj(2, bytes=1))  # adjacent to w.scalar; 4 trailing bytes unused


def test_object_past_payload(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.objects.bounds"):
        _open_mutated(tmp_path, _obj(2, bytes=6))


def test_same_object_id_twice(tmp_path: Path) -> None:
    """spec/ninfer3.md §validation: same object id twice -> directory error."""
    with raises_rule(InvalidError, "ninfer3.objects.id_unique"):
        _open_mutated(tmp_path, _obj(2, id="w.bf16"))


# -- step 5: components -----------------------------------------------------------------------


def _text(**fields: Any) -> Any:
    return lambda d: d["components"]["text"].update(fields)


def test_components_without_text(tmp_path: Path) -> None:
    def fn(d: dict[str, Any]) -> None:
        d["components"] = {"vision": d["components"].pop("text")}

    with raises_rule(InvalidError, "ninfer3.components.text"):
        _open_mutated(tmp_path, fn)


@pytest.mark.parametrize(
    "fn,rule",
    [
        (lambda d: d.update(components=[]), "ninfer3.record.type"),
        (lambda d: d["components"]["text"].pop("config"), "ninfer3.record.members"),
        (_text(extra=1), "ninfer3.record.members"),
        (_text(config=[]), "ninfer3.record.type"),
        (_text(resources=[]), "ninfer3.record.type"),
        (lambda d: d["components"].update({"": {"config": {}}}), "ninfer3.value.id"),
        (_text(target=""), "ninfer3.value.id"),
    ],
    ids=["not-object", "no-config", "unlisted", "config-array", "resources-array", "key", "tgt"],
)
def test_component_record(tmp_path: Path, fn: Any, rule: str) -> None:
    cls = InvalidError
    with raises_rule(cls, rule):
        _open_mutated(tmp_path, fn)


def test_component_target_missing(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.components.target"):
        _open_mutated(tmp_path, lambda d: d["components"].update(mtp={"config": {}, "target": "x"}))


@pytest.mark.parametrize("object_id", ["w.bf16", "r.absent"])
def test_resource_role_not_a_resource(tmp_path: Path, object_id: str) -> None:
    with raises_rule(InvalidError, "ninfer3.components.resource_ref"):
        _open_mutated(tmp_path, _text(resources={"tokenizer.json": object_id}))


def test_proposal_on_non_text_component(tmp_path: Path) -> None:
    vision = {"config": {}, "target": "text", "proposal": {"domain": "full"}}
    with raises_rule(InvalidError, "ninfer3.components.proposal_component"):
        _open_mutated(tmp_path, lambda d: d["components"].update(vision=vision))


@pytest.mark.parametrize(
    "proposal",
    [{"domain": "partial"}, {"domain": "full", "rows": 4}, {"domain": "indexed"}, {"domain": 1}],
)
def test_proposal_domain(tmp_path: Path, proposal: dict[str, Any]) -> None:
    with raises_rule(InvalidError, "ninfer3.components.proposal_domain"):
        _open_mutated(tmp_path, _text(proposal=proposal))


def test_proposal_rows_not_positive(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.value.positive_u64"):
        _open_mutated(tmp_path, _text(proposal={"domain": "indexed", "rows": 0}))


def test_proposal_forms_that_are_legal(tmp_path: Path) -> None:
    _open_mutated(tmp_path, _text(proposal={"domain": "indexed", "rows": 3}))
    _open_mutated(tmp_path, _text(proposal={"domain": "full"}))


# -- step 6: bindings -------------------------------------------------------------------------


def _bind(name: str, value: Any) -> Any:
    return lambda d: d["bindings"].update({name: value})


@pytest.mark.parametrize(
    "value",
    [{}, {"object": "w.bf16", "parts": []}, {"object": "w.bf16", "extra": 1}, {"range": [0, 1]}],
    ids=["empty", "both", "extra", "neither"],
)
def test_binding_form(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.bindings.form"):
        _open_mutated(tmp_path, _bind("p.x", value))


def test_binding_not_an_object(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.type"):
        _open_mutated(tmp_path, _bind("p.x", "w.bf16"))


def test_binding_name_not_an_id(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.value.id"):
        _open_mutated(tmp_path, _bind("", {"object": "w.bf16"}))


def test_parts_empty(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.bindings.parts_empty"):
        _open_mutated(tmp_path, _bind("p.x", {"parts": []}))


def test_part_member_set(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, _bind("p.x", {"parts": [{"object": "w.bf16"}]}))


@pytest.mark.parametrize(
    "value",
    [{"object": "w.none"}, {"parts": [{"object": "w.none", "range": [0, 1]}]}],
    ids=["whole", "part"],
)
def test_binding_names_no_object(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.bindings.object_ref"):
        _open_mutated(tmp_path, _bind("p.x", value))


@pytest.mark.parametrize(
    "value",
    [{"object": "r.hello"}, {"parts": [{"object": "r.hello", "range": [0, 1]}]}],
    ids=["whole", "part"],
)
def test_binding_names_a_resource(tmp_path: Path, value: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.bindings.object_kind"):
        _open_mutated(tmp_path, _bind("p.x", value))


@pytest.mark.parametrize("rng", [[0], [0, 1, 2], [0, 1.0], [-1, 2], "0:2", [True, 2]])
def test_part_range_form(tmp_path: Path, rng: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.bindings.range_form"):
        _open_mutated(tmp_path, _bind("p.x", {"parts": [{"object": "w.bf16", "range": rng}]}))


@pytest.mark.parametrize("rng", [[0, 5], [2, 2], [3, 1]])
def test_part_range_outside_parent(tmp_path: Path, rng: list[int]) -> None:
    """spec/ninfer3.md §validation: Part end > parent element count -> reference error."""
    with raises_rule(InvalidError, "ninfer3.bindings.range"):
        _open_mutated(tmp_path, _bind("p.x", {"parts": [{"object": "w.bf16", "range": rng}]}))


def test_part_range_129_261_on_260_elements(tmp_path: Path) -> None:
    """Upstream C++ rejection: range [129, 261] on a 260-element (q5 [2,130]) object."""
    doc = sharded_doc()
    doc["bindings"]["p.x"] = {"parts": [{"object": "w.q5", "range": [129, 261]}]}
    (entry, *_) = build_file_set(tmp_path, "s.ninfer", doc)
    with raises_rule(InvalidError, "ninfer3.bindings.range"):
        open_artifact(entry)
    doc["bindings"]["p.x"] = {"parts": [{"object": "w.q5", "range": [129, 260]}]}
    for p in tmp_path.iterdir():
        p.unlink()
    (entry, *_) = build_file_set(tmp_path, "s.ninfer", doc)
    open_artifact(entry).close()  # guard: the nearest legal range opens


def test_parts_running_total_exceeds_u64(tmp_path: Path) -> None:
    half = 2**63
    part = {"object": "w.huge", "range": [0, half]}

    def fn(d: dict[str, Any]) -> None:
        d["objects"][1].update(id="w.huge", shape=[half, 1])  # shapes are opaque at open
        d["bindings"] = {"p.x": {"parts": [part, part]}}
        d["uses"] = []

    with raises_rule(InvalidError, "ninfer3.bindings.total"):
        _open_mutated(tmp_path, fn)


# -- step 7: uses -----------------------------------------------------------------------------


def _use(**fields: Any) -> Any:
    return lambda d: d["uses"][0].update(fields)


def test_use_member_set(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.record.members"):
        _open_mutated(tmp_path, lambda d: d["uses"][0].pop("input"))


def test_use_parameter_unbound(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.uses.parameter"):
        _open_mutated(tmp_path, _use(parameter="p.absent"))


def test_duplicated_use(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.uses.unique"):
        _open_mutated(tmp_path, lambda d: d["uses"].append(dict(d["uses"][0])))


def test_same_parameter_other_input_is_legal(tmp_path: Path) -> None:
    _open_mutated(tmp_path, lambda d: d["uses"].append({"parameter": "p.vec", "input": "y"}))


@pytest.mark.parametrize("policy", ["a16only", "A16", None, 16, "AllowA2"])
def test_use_policy_spelling(tmp_path: Path, policy: Any) -> None:
    with raises_rule(InvalidError, "ninfer3.uses.policy"):
        _open_mutated(tmp_path, _use(activation_policy=policy))


@pytest.mark.parametrize(
    "aux,rule",
    [
        ([], "ninfer3.record.type"),
        ({"activation_input_divisor": {}}, "ninfer3.bindings.form"),
        ({"hadamard_signs": {"object": "r.hello"}}, "ninfer3.bindings.object_kind"),
        ({"": {"object": "w.scalar"}}, "ninfer3.value.id"),
    ],
    ids=["not-object", "bad-binding", "resource", "role"],
)
def test_use_auxiliaries(tmp_path: Path, aux: Any, rule: str) -> None:
    with raises_rule(InvalidError, rule):
        _open_mutated(tmp_path, _use(auxiliaries=aux))


# -- step 8: metadata and provenance ----------------------------------------------------------


@pytest.mark.parametrize(
    "fn,rule",
    [
        (lambda d: d.update(metadata=[]), "ninfer3.record.type"),
        (lambda d: d.update(provenance="x"), "ninfer3.record.type"),
        (lambda d: d["metadata"].update(name=""), "ninfer3.value.id"),
        (lambda d: d["metadata"].update(name=5), "ninfer3.value.id"),
    ],
    ids=["metadata-array", "provenance-string", "name-empty", "name-number"],
)
def test_metadata_and_provenance(tmp_path: Path, fn: Any, rule: str) -> None:
    with raises_rule(InvalidError, rule):
        _open_mutated(tmp_path, fn)


def test_metadata_is_otherwise_open(tmp_path: Path) -> None:
    _open_mutated(tmp_path, lambda d: d["metadata"].update(anything=[1, {"x": None}]))


# -- step 9: entry length ---------------------------------------------------------------------


@pytest.mark.parametrize("delta", [-1, 1])
def test_entry_length_must_match(tmp_path: Path, delta: int) -> None:
    """Upstream: an entry shortened by 1 byte is rejected (here already at open, step 9)."""
    (entry,) = build_file_set(tmp_path, "t.ninfer", tiny_doc(), TINY_PAYLOAD)
    resize(entry, 4_361 + delta)
    with raises_rule(MalformedError, "ninfer3.entry.length"):
        open_artifact(entry)


# -- the order of spec/ninfer3.md §validation
# ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "faults,rule",
    [
        (["files", "objects"], "ninfer3.files.entry_path"),
        (["objects", "components"], "ninfer3.objects.id_unique"),
        (["components", "bindings"], "ninfer3.components.target"),
        (["bindings", "uses"], "ninfer3.bindings.form"),
        (["uses", "metadata"], "ninfer3.uses.policy"),
        (["metadata", "length"], "ninfer3.value.id"),
    ],
)
def test_first_failing_step_wins(tmp_path: Path, faults: list[str], rule: str) -> None:
    edits = {
        "files": lambda d: d["files"][0].update(path="x"),
        "objects": _obj(2, id="w.bf16"),
        "components": _text(target="nothing"),
        "bindings": _bind("p.x", {}),
        "uses": _use(activation_policy="bad"),
        "metadata": lambda d: d["metadata"].update(name=""),
        "length": lambda d: d["files"][0].update(payload_bytes=300),
    }
    doc = tiny_doc()
    for fault in faults:
        edits[fault](doc)
    with raises_rule(InvalidError, rule):
        _open(tmp_path, doc)
