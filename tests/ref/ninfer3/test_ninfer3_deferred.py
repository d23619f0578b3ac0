"""Checks that wait until data is used: continuation volumes, range reads, object checks and the
binder, including every row of the spec spec/ninfer3.md §validation table (spec/ninfer3.md
§header-checks step 6, §range-reads, §validation).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from strategies.ninfer3 import (
    ENTRY_MAGIC,
    FIXED_ID,
    PART_MAGIC,
    SHARDED_PAYLOAD,
    TINY_PAYLOAD,
    build_file_set,
    encode,
    expect_violations,
    mutated,
    patch,
    raises_rule,
    resize,
    sharded_doc,
    tiny_doc,
)

from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import Artifact, open_artifact
from weightfile.spec.errors import InvalidError, MalformedError
from weightfile.spec.ninfer3.errors import ContinuationMissingError

ENTRY = "s.ninfer"


def _sharded(tmp_path: Path, doc: dict[str, Any] | None = None) -> list[Path]:
    return build_file_set(tmp_path, ENTRY, doc or sharded_doc(), SHARDED_PAYLOAD)


def _tiny(tmp_path: Path, fn: Any = None) -> Artifact:
    doc = mutated(tiny_doc(), fn) if fn else tiny_doc()
    (entry,) = build_file_set(tmp_path, "t.ninfer", doc, TINY_PAYLOAD)
    return open_artifact(entry)


# -- continuation volumes, opened lazily (spec/ninfer3.md §header-checks step 6)
# ----------------------------------------


def test_sharded_reads_equal_the_logical_payload(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    assert [p.stat().st_size for p in paths] == [4096 + 500, 4096 + 780, 4096 + 64]
    with open_artifact(paths[0]) as artifact:
        for offset, length in [(0, 1344), (499, 2), (256, 528), (1250, 40), (1344, 0), (10, 0)]:
            got = artifact.read_range(offset, length)
            assert bytes(got) == SHARDED_PAYLOAD[offset : offset + length]
        q5 = artifact.object_bytes("w.q5")  # straddles entry/part 1 like the C++ fixture
        assert bytes(q5) == SHARDED_PAYLOAD[256:784]
        assert bytes(artifact.resource("greeting")) == SHARDED_PAYLOAD[1250:1290]


def test_range_inside_one_file_is_a_zero_copy_view(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    with open_artifact(paths[0]) as artifact:
        view = artifact.read_range(600, 100)
        assert isinstance(view, memoryview) and view.readonly  # a window on the mapped file
        assert view.obj is artifact.files.volume(1)
        del view


def test_missing_third_file_fails_only_reads_that_need_it(tmp_path: Path) -> None:
    """spec/ninfer3.md §validation: second continuation file missing for a needed parent ->
    range-read failure."""
    paths = _sharded(tmp_path)
    paths[2].unlink()
    with open_artifact(paths[0]) as artifact:
        assert bytes(artifact.read_range(0, 1280)) == SHARDED_PAYLOAD[:1280]
        artifact.object_bytes("w.q5")
        with raises_rule(ContinuationMissingError, "ninfer3.part.missing") as info:
            artifact.resource("greeting")
        assert isinstance(info.value, FileNotFoundError)  # the spec's Python class
        assert isinstance(info.value, MalformedError)
    expect_violations(verify(paths[0]), [("MalformedError", "ninfer3.part.missing", "files[2]")])


def test_continuation_from_another_artifact(tmp_path: Path) -> None:
    """spec/ninfer3.md §validation: a same-numbered continuation file from another artifact ->
    artifact_id mismatch."""
    paths = _sharded(tmp_path)
    patch(paths[1], 31, b"\xff")  # one byte of the artifact_id differs
    with open_artifact(paths[0]) as artifact:
        artifact.read_range(0, 500)
        with raises_rule(InvalidError, "ninfer3.part.artifact_id"):
            artifact.read_range(499, 2)
    want = [("InvalidError", "ninfer3.part.artifact_id", "files[1]")]
    expect_violations(verify(paths[0]), want)


def test_continuation_part_index_wrong(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    patch(paths[2], 8, struct.pack("<Q", 1))
    with open_artifact(paths[0]) as artifact, raises_rule(InvalidError, "ninfer3.part.index"):
        artifact.read_range(1300, 1)


def test_continuation_magic_wrong(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    patch(paths[1], 0, b"NINFER")
    with open_artifact(paths[0]) as artifact, raises_rule(MalformedError, "ninfer3.part.magic"):
        artifact.read_range(600, 1)


def test_continuation_shorter_than_header(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    resize(paths[2], 31)
    with open_artifact(paths[0]) as artifact, raises_rule(MalformedError, "ninfer3.part.truncated"):
        artifact.read_range(1300, 1)


@pytest.mark.parametrize("delta", [-1, 1])
def test_continuation_length_wrong(tmp_path: Path, delta: int) -> None:
    paths = _sharded(tmp_path)
    resize(paths[1], 4096 + 780 + delta)
    with open_artifact(paths[0]) as artifact, raises_rule(MalformedError, "ninfer3.part.length"):
        artifact.read_range(600, 1)
    expect_violations(verify(paths[0]), [("MalformedError", "ninfer3.part.length", "files[1]")])


@pytest.mark.parametrize("offset,length", [(1344, 1), (0, 1345), (-1, 1), (5, -1)])
def test_range_read_past_payload(tmp_path: Path, offset: int, length: int) -> None:
    paths = _sharded(tmp_path)
    with open_artifact(paths[0]) as artifact, raises_rule(InvalidError, "ninfer3.range.bounds"):
        artifact.read_range(offset, length)


# -- deferred object checks (spec/ninfer3.md §validation)
# ------------------------------------------------------------


def _obj(i: int, **fields: Any) -> Any:
    return lambda d: d["objects"][i].update(fields)


@pytest.mark.parametrize(
    "fn,rule",
    [
        (_obj(0, format="q3_g64_fp16"), "ninfer3.object.format"),
        (_obj(0, format="BF16"), "ninfer3.object.format"),
        (_obj(0, layout="row_split_panel4_v1"), "ninfer3.object.layout"),
        (_obj(0, layout="contiguous-le-v1"), "ninfer3.object.layout"),
        (_obj(0, layout="row_split_k128_v1"), "ninfer3.object.layout_accepts"),
        (_obj(0, format="nvfp4", layout="block_scale_k16_m128x4_v1"), "ninfer3.object.shape"),
        (_obj(0, format="q8_g32_fp16", layout="row_split_k128_v1"), "ninfer3.object.shape"),
        (_obj(0, bytes=6), "ninfer3.object.bytes"),
        (_obj(0, shape=[2, 2]), "ninfer3.object.offset_alignment"),
        (_obj(2, encoding="gzip"), "ninfer3.object.encoding"),
    ],
    ids=[
        "format-unknown",
        "format-legacy-spelling",
        "layout-device-only",
        "layout-legacy-spelling",
        "pair-unsupported",
        "nvfp4-rank",
        "row-split-rank",
        "bytes",
        "alignment",
        "encoding",
    ],
)
def test_object_fails_only_when_used(tmp_path: Path, fn: Any, rule: str) -> None:
    """spec/ninfer3.md §validation: an unimplemented format/layout fails only when that object is
    interpreted."""
    if rule == "ninfer3.object.offset_alignment":
        fn = _misaligned
    with _tiny(tmp_path, fn) as artifact:  # the open succeeds
        bad = "r.hello" if rule == "ninfer3.object.encoding" else _bad_id(artifact)
        for other in artifact.directory.objects_by_id:
            if other != bad:
                artifact.object_bytes(other)  # every other object is still usable
        with raises_rule(InvalidError, rule):
            artifact.object_bytes(bad)
    (entry,) = tmp_path.iterdir()
    assert [v.rule for v in verify(entry)] == [rule]


def _bad_id(artifact: Artifact) -> str:
    return "w.moved" if "w.moved" in artifact.directory.objects_by_id else "w.bf16"


def _misaligned(d: dict[str, Any]) -> None:
    """A resource then a tensor at offset 5: bytes are right, alignment is not."""
    d["objects"][0].update(id="w.moved", offset=5)
    d["objects"].insert(0, {"id": "r.a", "kind": "resource", "encoding": "raw_bytes_v1"})
    d["objects"][0].update(offset=0, bytes=5)
    d["bindings"] = {}
    d["uses"] = []


def test_unknown_object_id(tmp_path: Path) -> None:
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.object.unknown"):
        artifact.object("w.none")


# -- binder checks (spec/ninfer3.md §binding, §use, §validation)
# --------------------------------------------------------


def test_bind_whole_and_parts(tmp_path: Path) -> None:
    with _tiny(tmp_path) as artifact:
        whole = artifact.bind("p.vec", [4])
        assert [(r.object_id, r.begin, r.end) for r in whole] == [("w.bf16", 0, 4)]
        split = artifact.bind("p.split", [2, 2])  # parts reorder and reshape
        assert [(r.begin, r.end) for r in split] == [(2, 4), (0, 2)]


def test_whole_binding_needs_the_exact_shape(tmp_path: Path) -> None:
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.binder.shape"):
        artifact.bind("p.vec", [2, 2])  # same element count, no silent reshape


@pytest.mark.parametrize("shape", [[3], [5], [2, 3]])
def test_parts_total_differs_from_parameter(tmp_path: Path, shape: list[int]) -> None:
    """spec/ninfer3.md §validation: Part total != parameter element count -> binder coverage
    error."""
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.binder.coverage"):
        artifact.bind("p.split", shape)


def test_required_parameter_absent(tmp_path: Path) -> None:
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.binder.parameter"):
        artifact.bind("text/final_norm", [4])


def test_selected_component_missing(tmp_path: Path) -> None:
    """spec/ninfer3.md §validation: selecting vision/spec that the file does not provide ->
    component missing."""
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.binder.component"):
        artifact.component("vision")


def test_selected_component_must_target_text(tmp_path: Path) -> None:
    def fn(d: dict[str, Any]) -> None:
        d["components"]["vision"] = {"config": {}, "target": "text"}
        d["components"]["mtp"] = {"config": {}, "target": "vision"}

    with _tiny(tmp_path, fn) as artifact:
        assert artifact.component("vision").target == "text"
        with raises_rule(InvalidError, "ninfer3.binder.component_target"):
            artifact.component("mtp")


def test_required_resource_role_absent(tmp_path: Path) -> None:
    with _tiny(tmp_path) as artifact, raises_rule(InvalidError, "ninfer3.binder.resource"):
        artifact.resource("tokenizer.json")


def _divisor(binding: dict[str, Any], **scalar: Any) -> Any:
    def fn(d: dict[str, Any]) -> None:
        d["objects"][1].update(scalar)
        d["uses"][0]["auxiliaries"] = {"activation_input_divisor": binding}

    return fn


def test_scalar_divisor_reads_one_fp32(tmp_path: Path) -> None:
    with _tiny(tmp_path, _divisor({"object": "w.scalar"})) as artifact:
        assert artifact.activation_divisor(artifact.directory.uses[0]) == 2.0


def test_divisor_as_one_element_part_of_fp32_vector(tmp_path: Path) -> None:
    binding = {"parts": [{"object": "w.scalar", "range": [0, 1]}]}
    with _tiny(tmp_path, _divisor(binding, shape=[1])) as artifact:
        assert artifact.activation_divisor(artifact.directory.uses[0]) == 2.0


@pytest.mark.parametrize(
    "binding,scalar",
    [
        ({"object": "w.bf16"}, {}),  # bf16 vector
        ({"object": "w.scalar"}, {"shape": [1]}),  # fp32 but not shape []
        ({"parts": [{"object": "w.bf16", "range": [0, 1]}]}, {}),  # one bf16 element
        ({"parts": [{"object": "w.scalar", "range": [0, 1]}] * 2}, {"shape": [1]}),
    ],
    ids=["bf16-vector", "fp32-shape-1", "bf16-part", "two-elements"],
)
def test_divisor_not_one_fp32_element(
    tmp_path: Path, binding: dict[str, Any], scalar: dict[str, Any]
) -> None:
    """spec/ninfer3.md §validation: scalar activation divisor bound to a non-scalar or non-FP32
    value."""
    with (
        _tiny(tmp_path, _divisor(binding, **scalar)) as artifact,
        raises_rule(InvalidError, "ninfer3.binder.divisor"),
    ):
        artifact.activation_divisor(artifact.directory.uses[0])


@pytest.mark.parametrize("word", ["00000000", "000080ff", "0000c07f", "000080bf"])
def test_divisor_value_not_finite_positive(tmp_path: Path, word: str) -> None:
    artifact = _tiny(tmp_path, _divisor({"object": "w.scalar"}))
    artifact.close()
    patch(artifact.path, 4096 + 256, bytes.fromhex(word))
    with open_artifact(artifact.path) as again, raises_rule(InvalidError, "ninfer3.binder.divisor"):
        again.activation_divisor(again.directory.uses[0])


def test_auxiliary_role_not_accepted(tmp_path: Path) -> None:
    def fn(d: dict[str, Any]) -> None:
        d["uses"][0]["auxiliaries"] = {"zero_point": {"object": "w.scalar"}}

    with (
        _tiny(tmp_path, fn) as artifact,
        raises_rule(InvalidError, "ninfer3.binder.auxiliary_role"),
    ):
        artifact.activation_divisor(artifact.directory.uses[0])


def test_huge_declared_volume_is_checked_before_any_allocation(tmp_path: Path) -> None:
    """files[1] claims 2^40 bytes; a read spanning it fails on the volume length, not on
    allocating a 1 TiB buffer."""
    doc = tiny_doc()
    doc["objects"] = [
        {"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1"}
        | {"offset": 0, "bytes": 2**40}
    ]
    doc["components"]["text"]["resources"] = {}
    doc["bindings"], doc["uses"] = {}, []
    doc["files"] = [{"path": None, "payload_bytes": 100}, {"path": "p1", "payload_bytes": 2**40}]
    text = encode(doc)
    entry = tmp_path / "t.ninfer"
    entry.write_bytes(ENTRY_MAGIC + struct.pack("<Q", 4064) + FIXED_ID + text.ljust(4064))
    resize(entry, 4096 + 100)
    part = tmp_path / "p1"  # the real volume is tiny: never a 1 TiB file, not even sparse
    part.write_bytes(PART_MAGIC + struct.pack("<Q", 1) + FIXED_ID)
    resize(part, 4096 + 100)
    with open_artifact(entry) as artifact, raises_rule(MalformedError, "ninfer3.part.length"):
        artifact.object_bytes("r.big")


def _signs_doc(words: bytes, fmt: str = "bf16") -> tuple[dict[str, Any], bytes]:
    doc = tiny_doc()
    doc["objects"] = [
        {"id": "w.signs", "kind": "tensor", "shape": [1024], "format": fmt}
        | {"layout": "contiguous_le_v1", "offset": 0, "bytes": len(words)}
    ]
    doc["components"]["text"]["resources"] = {}
    doc["bindings"] = {"p.w": {"object": "w.signs"}}
    doc["uses"] = [
        {"parameter": "p.w", "input": "x", "auxiliaries": {"hadamard_signs": {"object": "w.signs"}}}
    ]
    doc["files"] = [{"path": None, "payload_bytes": len(words)}]
    return doc, words


PLUS, MINUS = bytes.fromhex("803f"), bytes.fromhex("80bf")  # bf16 +1.0 / −1.0, little-endian


def test_hadamard_signs_read_as_plus_minus_one(tmp_path: Path) -> None:
    doc, words = _signs_doc((PLUS + MINUS) * 512)
    (entry,) = build_file_set(tmp_path, "h.ninfer", doc, words)
    with open_artifact(entry) as artifact:
        signs = artifact.hadamard_signs(artifact.directory.uses[0], [8, 1024])
        assert signs == [1, -1] * 512


@pytest.mark.parametrize(
    "words,fmt,shape",
    [
        ((PLUS + MINUS) * 511 + PLUS + bytes(2), "bf16", [8, 1024]),  # a 0.0 sign
        ((PLUS + MINUS) * 512, "bf16", [8, 2048]),  # K != signs length
        ((PLUS + MINUS) * 512, "bf16", [1024]),  # parameter is not a matrix
        ((PLUS + PLUS) * 1024, "fp32", [8, 1024]),  # not bf16
    ],
    ids=["zero-sign", "wrong-k", "vector-parameter", "fp32"],
)
def test_hadamard_signs_rejected(tmp_path: Path, words: bytes, fmt: str, shape: list[int]) -> None:
    doc, words = _signs_doc(words, fmt)
    (entry,) = build_file_set(tmp_path, "h.ninfer", doc, words)
    with open_artifact(entry) as artifact, raises_rule(InvalidError, "ninfer3.binder.hadamard"):
        artifact.hadamard_signs(artifact.directory.uses[0], shape)
