"""`verify` lists every broken directory, binding and use rule of a `.ninfer` file set, each with
its JSON path, while the reader still stops at the first (spec/ninfer3.md §validation).

Each test starts from the spec/ninfer3.md §framing-numbers tiny file (guarded by
test_ninfer3_open_rejects.py) and breaks independent records; the faults are chosen so that none
implies another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strategies.ninfer3 import (
    TINY_PAYLOAD,
    build_file_set,
    encode,
    expect_violations,
    mutated,
    raises_rule,
    resize,
    tiny_doc,
)

from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.errors import InvalidError, MalformedError


def _entry(tmp_path: Path, doc_or_text: Any, **kw: Any) -> Path:
    (entry, *_) = build_file_set(tmp_path, "tiny.ninfer", doc_or_text, TINY_PAYLOAD, **kw)
    return entry


def _three_faults(d: dict[str, Any]) -> None:
    d["components"]["text"]["target"] = "vision"  # no such component
    d["bindings"]["p.split"]["parts"][0]["range"] = [3, 9]  # past w.bf16's 4 elements
    d["uses"][0]["activation_policy"] = "A8"  # not a registered spelling


THREE = [
    ("InvalidError", "ninfer3.components.target", 'components["text"].target'),
    ("InvalidError", "ninfer3.bindings.range", 'bindings["p.split"].parts[0].range'),
    ("InvalidError", "ninfer3.uses.policy", "uses[0].activation_policy"),
]


def test_three_independent_directory_faults_are_three_violations(tmp_path: Path) -> None:
    entry = _entry(tmp_path, mutated(tiny_doc(), _three_faults))
    expect_violations(verify(entry), THREE)


def test_the_reader_still_raises_the_first_of_them(tmp_path: Path) -> None:
    entry = _entry(tmp_path, mutated(tiny_doc(), _three_faults))
    with raises_rule(InvalidError, "ninfer3.components.target"):
        open_artifact(entry)


def test_a_use_of_a_broken_binding_is_not_reported_twice(tmp_path: Path) -> None:
    def fault(d: dict[str, Any]) -> None:
        d["bindings"]["p.vec"] = {"object": "w.missing"}

    found = verify(_entry(tmp_path, mutated(tiny_doc(), fault)))
    expect_violations(
        found, [("InvalidError", "ninfer3.bindings.object_ref", 'bindings["p.vec"].object')]
    )


def test_two_broken_bindings_and_metadata_are_all_listed(tmp_path: Path) -> None:
    def faults(d: dict[str, Any]) -> None:
        d["bindings"]["p.vec"] = {"object": "r.hello"}  # a resource, not a tensor
        d["bindings"]["p.split"]["parts"] = []
        d["metadata"]["name"] = ""

    expect_violations(
        verify(_entry(tmp_path, mutated(tiny_doc(), faults))),
        [
            ("InvalidError", "ninfer3.bindings.object_kind", 'bindings["p.vec"].object'),
            ("InvalidError", "ninfer3.bindings.parts_empty", 'bindings["p.split"].parts'),
            ("InvalidError", "ninfer3.value.id", "metadata.name"),
        ],
    )


def test_a_broken_object_ends_the_walk_after_the_objects(tmp_path: Path) -> None:
    """Every later member refers to objects, so a broken one would only echo."""

    def faults(d: dict[str, Any]) -> None:
        d["objects"][0]["kind"] = "blob"
        d["objects"][2]["offset"] = 2  # below w.scalar's end
        d["uses"][0]["activation_policy"] = "A8"

    expect_violations(
        verify(_entry(tmp_path, mutated(tiny_doc(), faults))),
        [
            ("InvalidError", "ninfer3.objects.kind", "objects[0].kind"),
            ("InvalidError", "ninfer3.objects.order", "objects[2].offset"),
        ],
    )


def test_directory_faults_and_a_wrong_entry_length_are_all_listed(tmp_path: Path) -> None:
    def faults(d: dict[str, Any]) -> None:
        d["files"][0]["payload_bytes"] = 266
        d["uses"][0]["activation_policy"] = "A8"

    entry = _entry(tmp_path, mutated(tiny_doc(), faults))
    resize(entry, 4096 + 265)  # one byte short of the 266 the directory declares
    found = verify(entry)
    assert [(v.error_class, v.rule, v.path) for v in found] == [
        ("InvalidError", "ninfer3.uses.policy", "uses[0].activation_policy"),
        ("MalformedError", "ninfer3.entry.length", None),
    ]
    assert found[1].offset == 0


def test_a_json_failure_is_fatal_and_alone(tmp_path: Path) -> None:
    text = encode(mutated(tiny_doc(), _three_faults)).replace(b'"tiny"', b"NaN")
    found = verify(_entry(tmp_path, text))
    expect_violations(found, [("MalformedError", "ninfer3.json.non_finite", None)])
    assert MalformedError.__name__ == found[0].error_class
