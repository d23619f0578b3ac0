"""The writer: placement, JSON reserve, sharding, names, artifact ids, streaming writes and
atomic publication (spec/ninfer3.md §writer, §json-serialisation, §framing-numbers). Expected
numbers come from the spec."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from strategies.ninfer3 import raises_rule

from weightfile.ref.ninfer3.plan import (
    ResourceSpec,
    TensorSpec,
    part_name,
    plan_objects,
    split_payload,
)
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.ninfer3.write import ArtifactWriter, write_artifact
from weightfile.spec.errors import DestinationExistsError, InvalidError
from weightfile.spec.ninfer3.framing import DEFAULT_LIMIT

TEXT = {"text": {"config": {}}}


def test_default_limit_is_32_decimal_gb() -> None:
    assert DEFAULT_LIMIT == 32_000_000_000


@pytest.mark.parametrize(
    "payload,entry_start,want",
    [
        # spec/ninfer3.md §framing-numbers upstream test: 32e9-byte payload, small JSON -> 2 files
        (32_000_000_000, 4096, [31_999_995_904, 4_096]),
        # a payload of 32e9 − 4096 stays in one file
        (32_000_000_000 - 4096, 4096, [32_000_000_000 - 4096]),
        # spec spec/ninfer3.md §grouped-formats example: entry_payload_start 65536
        (31_999_934_464 + 4_096, 65_536, [31_999_934_464, 4_096]),
    ],
)
def test_default_limit_worked_numbers(payload: int, entry_start: int, want: list[int]) -> None:
    files = split_payload(payload, entry_start, DEFAULT_LIMIT, "m.ninfer")
    assert [f["payload_bytes"] for f in files] == want
    names = [None, "m.ninfer.part-0001"]
    assert [f["path"] for f in files] == names[: len(want)]


def test_payload_of_2_pow_64_is_rejected() -> None:
    with raises_rule(InvalidError, "ninfer3.files.total"):
        split_payload(2**64, 4096, DEFAULT_LIMIT, "m.ninfer")


def test_part_names_have_at_least_four_digits() -> None:
    assert part_name("a.ninfer", 1) == "a.ninfer.part-0001"
    assert part_name("a.ninfer", 9999) == "a.ninfer.part-9999"
    assert part_name("a.ninfer", 10000) == "a.ninfer.part-10000"


def test_tiny_sharded_set_with_limit_12288(tmp_path: Path) -> None:
    """spec/ninfer3.md §framing-numbers: one 27,610-byte resource, limit 12,288 -> files
    8192/8192/8192/3034."""
    data = bytes((i * 13 + 5) % 256 for i in range(27_610))
    paths = write_artifact(
        tmp_path / "large.ninfer",
        {"r.big": data},
        objects=[ResourceSpec("r.big", len(data))],
        components=TEXT,
        limit=12_288,
    )
    assert [p.name for p in paths] == ["large.ninfer"] + [
        f"large.ninfer.part-000{i}" for i in (1, 2, 3)
    ]
    assert [p.stat().st_size for p in paths] == [12_288, 12_288, 12_288, 7_130]
    part2 = paths[2].read_bytes()
    entry = paths[0].read_bytes()
    assert part2[:16] == bytes.fromhex("4e494e5052540003 0200000000000000")
    assert part2[16:32] == entry[16:32]  # same artifact_id as the entry
    assert part2[32:4096] == bytes(4064)  # zero-filled rest of the part header block
    with open_artifact(paths[0]) as artifact:
        sizes = [f.payload_bytes for f in artifact.directory.files]
        assert sizes == [8192, 8192, 8192, 3034]
        assert bytes(artifact.read_range(8120, 25420 - 8120)) == data[8120:25420]


def test_json_reserve_is_space_padded_to_the_payload_start(tmp_path: Path) -> None:
    objects = [
        TensorSpec("w.a", (3,), "bf16", "contiguous_le_v1"),
        ResourceSpec("r.x", 5),
        TensorSpec("w.b", (2, 65), "q4_g64_fp16", "row_split_k128_v1"),
    ]
    (entry,) = write_artifact(
        tmp_path / "m.ninfer", {"r.x": b"hello"}, objects=objects, components=TEXT
    )
    raw = entry.read_bytes()
    json_bytes = int.from_bytes(raw[8:16], "little")
    assert (32 + json_bytes) % 4096 == 0  # metadata_end == entry_payload_start
    text = raw[32 : 32 + json_bytes]
    body = text.rstrip(b" ")
    assert not body.startswith(b"\xef\xbb\xbf") and b" " not in body  # compact, no BOM
    doc = json.loads(body)
    root_order = ["components", "objects", "bindings", "uses", "metadata", "provenance", "files"]
    assert list(doc) == root_order
    assert list(doc["objects"][0]) == ["id", "shape", "format", "layout", "offset", "bytes", "kind"]
    assert list(doc["objects"][1]) == ["id", "encoding", "offset", "bytes", "kind"]
    # placement: tensor at 0 (6 bytes), resource unaligned at 6, tensor at align_up(11, 256)
    assert [(o["offset"], o["bytes"]) for o in doc["objects"]] == [
        (0, 6),
        (6, 5),
        (256, 264),
    ]  # q4 [2,65]: scales at 256, 2·2·2 bytes
    assert doc["files"] == [{"path": None, "payload_bytes": 520}]


def test_artifact_id_is_random_per_file_set(tmp_path: Path) -> None:
    ids = set()
    for name in ("a.ninfer", "b.ninfer"):
        (entry,) = write_artifact(
            tmp_path / name, {}, objects=[ResourceSpec("r", 1)], components=TEXT
        )
        ids.add(entry.read_bytes()[16:32])
    assert len(ids) == 2


def test_placement_errors() -> None:
    with raises_rule(InvalidError, "ninfer3.writer.objects"):
        plan_objects([])
    with raises_rule(InvalidError, "ninfer3.writer.objects"):
        plan_objects([ResourceSpec("r", 1), ResourceSpec("r", 2)])
    with raises_rule(InvalidError, "ninfer3.writer.objects"):
        plan_objects([ResourceSpec("r", 0)])
    with raises_rule(InvalidError, "ninfer3.object.format"):
        plan_objects([TensorSpec("w", (2,), "bf17", "contiguous_le_v1")])
    with raises_rule(InvalidError, "ninfer3.object.encoding"):
        plan_objects([ResourceSpec("r", 1, "gzip")])


@pytest.mark.parametrize("limit", [4096, 4097, 8191])
def test_limit_too_small(tmp_path: Path, limit: int) -> None:
    with raises_rule(InvalidError, "ninfer3.writer.limit"):
        ArtifactWriter(
            tmp_path / "m.ninfer", objects=[ResourceSpec("r", 10_000)], components=TEXT, limit=limit
        )
    assert list(tmp_path.iterdir()) == []


def _writer(path: Path, size: int = 9000, limit: int = 8192) -> ArtifactWriter:
    return ArtifactWriter(path, objects=[ResourceSpec("r", size)], components=TEXT, limit=limit)


@pytest.mark.parametrize("existing", ["m.ninfer", "m.ninfer.part-0001", "m.ninfer.part-0002"])
def test_existing_destination_is_never_overwritten(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).write_bytes(b"precious")
    with raises_rule(DestinationExistsError, "ninfer3.writer.exists") as info:
        _writer(tmp_path / "m.ninfer")
    assert isinstance(info.value, FileExistsError)
    assert [p.name for p in tmp_path.iterdir()] == [existing]
    assert (tmp_path / existing).read_bytes() == b"precious"


def test_destination_appearing_before_publication_aborts_all(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "m.ninfer")
    writer.write("r", bytes(9000))
    (tmp_path / "m.ninfer").write_bytes(b"someone else")  # the entry is published last
    with raises_rule(DestinationExistsError, "ninfer3.writer.exists"):
        writer.finish()
    assert [p.name for p in tmp_path.iterdir()] == ["m.ninfer"]  # parts were removed again
    assert (tmp_path / "m.ninfer").read_bytes() == b"someone else"


def test_exception_inside_the_block_removes_everything(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), _writer(tmp_path / "m.ninfer") as writer:
        writer.write("r", b"x" * 100)
        assert len(list(tmp_path.iterdir())) == 3  # hidden temp files exist meanwhile
        assert all(p.name.startswith(".m.ninfer") for p in tmp_path.iterdir())
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_write_past_an_object_is_refused(tmp_path: Path) -> None:
    with _writer(tmp_path / "m.ninfer") as writer:
        writer.write("r", bytes(8999))
        with raises_rule(InvalidError, "ninfer3.writer.coverage"):
            writer.write("r", b"12")
        with raises_rule(InvalidError, "ninfer3.object.unknown"):
            writer.write("w.none", b"1")
    assert list(tmp_path.iterdir()) == []


def test_finish_with_uncovered_bytes_removes_everything(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "m.ninfer")
    writer.write_zeros("r", 8000)
    with raises_rule(InvalidError, "ninfer3.writer.coverage"):
        writer.finish()
    assert list(tmp_path.iterdir()) == []


def test_chunks_are_mapped_across_files(tmp_path: Path) -> None:
    data = os.urandom(9000)
    with _writer(tmp_path / "m.ninfer") as writer:
        for i in range(0, 9000, 977):  # chunks that straddle both file boundaries
            writer.write("r", data[i : i + 977])
        paths = writer.finish()
    assert len(paths) == 3 and not any(p.name.startswith(".") for p in tmp_path.iterdir())
    with open_artifact(paths[0]) as artifact:
        assert bytes(artifact.object_bytes("r")) == data


def test_data_for_an_unplanned_object_is_refused(tmp_path: Path) -> None:
    with raises_rule(InvalidError, "ninfer3.object.unknown"):
        write_artifact(
            tmp_path / "m.ninfer",
            {"r": b"x", "r.typo": b"y"},
            objects=[ResourceSpec("r", 1)],
            components=TEXT,
        )
    assert list(tmp_path.iterdir()) == []


def test_abort_after_finish_keeps_the_published_files(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "m.ninfer")
    writer.write_zeros("r", 9000)
    paths = writer.finish()
    writer.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
    with pytest.raises(RuntimeError):
        writer.write("r", b"")
