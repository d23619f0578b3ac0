"""Property: whatever legal directory the writer is given, reading it back gives the same
directory and bytes, and every range read over any shard boundary equals the logical payload
(spec/ninfer3.md §logical-payload, §range-reads, §writer, §directory)."""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import event, given, reject
from hypothesis import strategies as st
from strategies.ninfer3 import build_file_set, directories

from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.ninfer3.write import ArtifactWriter
from weightfile.spec.errors import InvalidError


def _chunks(draw: Any, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=3)))
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@given(case=directories(), data=st.data())
def test_write_then_read_round_trips(case: dict[str, Any], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        entry = Path(folder) / "model.ninfer"
        try:
            writer = ArtifactWriter(entry, **case)
        except InvalidError as exc:
            if exc.rule != "ninfer3.writer.limit":
                raise
            reject()  # a random limit below the header + JSON size
        contents: dict[str, bytes] = {}
        with writer:
            for spec in case["objects"]:
                size = writer.object_bytes(spec.id)
                # Seeded bytes: large objects would overrun Hypothesis's entropy buffer.
                seed = data.draw(st.integers(0, 2**32 - 1))
                contents[spec.id] = random.Random(seed).randbytes(size)
                for chunk in _chunks(data.draw, contents[spec.id]):
                    writer.write(spec.id, chunk)
            paths = writer.finish()
        event(f"{len(paths)} file(s)")
        limit = case.get("limit", 32_000_000_000)
        assert all(p.stat().st_size <= limit for p in paths)
        assert [p.name for p in paths[1:]] == [
            f"model.ninfer.part-{i:04d}" for i in range(1, len(paths))
        ]
        with open_artifact(entry) as artifact:
            _check_directory(artifact, case)
            logical = bytearray(artifact.directory.payload_bytes)  # gaps are zeros
            prev_end = 0
            for spec in case["objects"]:
                o = artifact.object(spec.id)  # deferred checks pass
                assert o.offset >= prev_end
                assert o.offset % (1 if o.kind == "resource" else 256) == 0
                assert o.offset - prev_end < (1 if o.kind == "resource" else 256)
                prev_end = o.end
                assert bytes(artifact.object_bytes(spec.id)) == contents[spec.id]
                logical[o.offset : o.end] = contents[spec.id]
            assert artifact.directory.payload_bytes == prev_end  # truncated after the last
            _check_ranges(artifact, bytes(logical), data)
        assert sorted(p.name for p in Path(folder).iterdir()) == sorted(p.name for p in paths)


def _check_directory(artifact: Any, case: dict[str, Any]) -> None:
    d = artifact.directory
    assert [o.id for o in d.objects] == [s.id for s in case["objects"]]
    got_bindings = {
        name: {"object": b.object_id}
        if b.object_id
        else {"parts": [{"object": p.object_id, "range": [p.begin, p.end]} for p in b.parts]}
        for name, b in d.bindings.items()
    }
    assert got_bindings == case["bindings"]
    got_uses = [
        {"parameter": u.parameter, "input": u.input}
        | ({"activation_policy": u.activation_policy} if u.activation_policy else {})
        for u in d.uses
    ]
    assert got_uses == case["uses"]
    for cid, component in case["components"].items():
        assert d.components[cid].config == component["config"]
        assert d.components[cid].resources == component.get("resources", {})
        assert d.components[cid].target == component.get("target")
    assert d.metadata == case["metadata"] and d.provenance == case["provenance"]
    files = d.files
    assert all(f.logical_start % 4096 == 0 for f in files)  # spec/ninfer3.md §writer result


def _check_ranges(artifact: Any, logical: bytes, data: st.DataObject) -> None:
    total = len(logical)
    boundaries = [f.logical_start for f in artifact.directory.files] + [total]
    for _ in range(4):
        at = data.draw(st.sampled_from(boundaries))
        offset = data.draw(st.integers(max(0, at - 300), min(at, total)))
        length = data.draw(st.integers(0, total - offset))
        assert bytes(artifact.read_range(offset, length)) == logical[offset : offset + length]


@given(
    sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_range_reads_over_random_shard_boundaries(
    sizes: list[int], seed: int, data: st.DataObject
) -> None:
    """Hand-built file sets with arbitrary segment sizes (not multiples of 4096, as
    spec/ninfer3.md §files-table allows): every range read equals the logical payload
    (spec/ninfer3.md §range-reads)."""
    payload = random.Random(seed).randbytes(sum(sizes))
    doc = {
        "components": {"text": {"config": {}}},
        "objects": [
            {"id": "r", "kind": "resource", "encoding": "raw_bytes_v1"}
            | {"offset": 0, "bytes": len(payload)}
        ],
        "bindings": {},
        "uses": [],
        "files": [{"path": None, "payload_bytes": sizes[0]}]
        + [{"path": f"seg{i}", "payload_bytes": n} for i, n in enumerate(sizes[1:], 1)],
    }
    with tempfile.TemporaryDirectory() as folder:
        entry, *_ = build_file_set(Path(folder), "m.ninfer", doc, payload)
        with open_artifact(entry) as artifact:
            assert bytes(artifact.object_bytes("r")) == payload
            starts = [f.logical_start for f in artifact.directory.files]
            for _ in range(6):
                at = data.draw(st.sampled_from([*starts, len(payload)]))
                offset = data.draw(st.integers(max(0, at - 64), at))
                length = data.draw(st.integers(0, len(payload) - offset))
                got = artifact.read_range(offset, length)
                assert bytes(got) == payload[offset : offset + length]
