"""The two spec/ninfer3.md §examples example directories rebuilt into real files and read back
(spec/ninfer3.md §examples, §framing-numbers).

Every expected number below is copied from the spec's spec/ninfer3.md §examples tables, never
computed by the code under test. Payloads are zeros left sparse by ftruncate, plus a few marker
bytes at the file boundaries so cross-file reads are checked byte for byte.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from strategies.ninfer3 import (
    EXAMPLE_SHARDED,
    EXAMPLE_TEXT,
    build_file_set,
    load_example,
    patch,
)

from weightfile.commands.inspect import format_ninfer3 as format_text
from weightfile.ref.ninfer3.describe import describe, verify
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.ninfer3.write import ArtifactWriter

# spec/ninfer3.md §examples objects table: id -> (ex1 offset, ex2 offset, bytes)
COMMON = {
    "r.tokenizer": (0, 0, 12_809_320),
    "r.tokenizer_config": (12_809_320, 12_809_320, 17_928),
    "r.chat_template": (12_827_248, 12_827_248, 8_952),
    "r.generation_config": (12_836_200, 12_836_200, 202),
    "w.embedding": (12_836_608, 12_836_608, 63_569_920),
    "w.final_norm": (76_406_528, 76_406_528, 256),
    "w.head": (76_406_784, 76_406_784, 63_569_920),
    "w.layer0.input_norm": (139_976_704, 139_976_704, 256),
    "w.layer0.post_attention_norm": (139_976_960, 139_976_960, 256),
    "w.layer0.query_norm": (140_108_288, 140_016_128, 256),
    "w.layer0.key_norm": (140_108_544, 140_016_384, 256),
    "w.layer0.attn_output": (140_108_800, 140_016_640, 32_768),
    "w.layer0.gate_up": (140_141_568, 140_049_408, 131_072),
    "w.layer0.down": (140_272_640, 140_180_480, 65_536),
}
EX1 = {k: (v[0], v[2]) for k, v in COMMON.items()} | {"w.layer0.attn": (139_977_216, 131_072)}
EX2 = {k: (v[1], v[2]) for k, v in COMMON.items()} | {
    "w.layer0.attn_qk": (139_977_216, 17_408),
    "w.layer0.attn_gate_value": (139_994_624, 21_504),
}
EX2_NAME = "artifact-v3-mixed-sharded.ninfer"
EX2_FILES = [
    (None, 63_934_464),
    (EX2_NAME + ".part-0001", 63_995_904),
    (EX2_NAME + ".part-0002", 12_315_648),
]
EX2_PREFIXES = [0, 63_934_464, 127_930_368, 140_246_016]
EX2_SIZES = [64_000_000, 64_000_000, 12_319_744]
EX1_SIZE = 140_403_712
EX1_PAYLOAD = 140_338_176
CROSSING = {"w.embedding": [0, 1], "w.head": [1, 2]}  # spec/ninfer3.md §examples "objects crossing
# files"


def _marker(n: int, seed: int) -> bytes:
    return bytes((i * 31 + seed) % 251 for i in range(n))


def _check_objects(artifact, want: dict[str, tuple[int, int]]) -> None:
    got = {o.id: (o.offset, o.bytes) for o in artifact.directory.objects}
    assert got == want
    for object_id in want:  # every deferred check passes: format, layout, size, alignment
        artifact.object(object_id)


def test_example_text_single_file_hand_built(tmp_path: Path) -> None:
    text = EXAMPLE_TEXT.read_bytes()  # pretty JSON, 2-space indent, trailing newline
    assert len(text.decode("utf-8")) == 7_667
    (entry,) = build_file_set(tmp_path, "artifact-v3-text.ninfer", text, json_bytes=65_504)
    assert os.path.getsize(entry) == EX1_SIZE
    with open_artifact(entry) as artifact:
        assert artifact.header.json_bytes == 65_504
        assert [(f.path, f.payload_bytes) for f in artifact.directory.files] == [
            (None, EX1_PAYLOAD)
        ]
        assert artifact.directory.payload_bytes == EX1_PAYLOAD
        _check_objects(artifact, EX1)
        assert len(artifact.directory.uses) == 9
        query = artifact.bind("text/layers/0/attention/value", (128, 128))
        assert [(r.object_id, r.begin, r.end) for r in query] == [("w.layer0.attn", 49152, 65536)]
    assert verify(entry) == []


def test_example_sharded_hand_built(tmp_path: Path) -> None:
    text = EXAMPLE_SHARDED.read_bytes()
    assert len(text.decode("utf-8")) == 8_163
    paths = build_file_set(tmp_path, EX2_NAME, text, json_bytes=65_504)
    assert [os.path.getsize(p) for p in paths] == EX2_SIZES
    # Marker bytes around both file boundaries, written straight into the files
    # (spec/ninfer3.md §range-reads mapping by hand: entry payload starts at 65,536, each part's at
    # 4,096).
    patch(paths[0], 65_536 + 63_934_464 - 100, _marker(100, 1))
    patch(paths[1], 4_096, _marker(100, 2))
    patch(paths[1], 4_096 + 63_995_904 - 100, _marker(100, 3))
    patch(paths[2], 4_096, _marker(100, 4))
    with open_artifact(paths[0]) as artifact:
        files = artifact.directory.files
        assert [(f.path, f.payload_bytes) for f in files] == EX2_FILES
        assert [f.logical_start for f in files] + [files[-1].logical_end] == EX2_PREFIXES
        _check_objects(artifact, EX2)
        first = artifact.read_range(63_934_464 - 100, 200)
        assert bytes(first) == _marker(100, 1) + _marker(100, 2)
        second = artifact.read_range(127_930_368 - 100, 200)
        assert bytes(second) == _marker(100, 3) + _marker(100, 4)
        head = artifact.object_bytes("w.head")  # spans files 1 and 2
        assert len(head) == 63_569_920
        cut = 127_930_368 - 76_406_784
        assert bytes(head[cut - 100 : cut + 100]) == bytes(second)
    description = describe(paths[0])
    spans = {o["id"]: o["files"] for o in description["objects"] if len(o["files"]) > 1}
    assert spans == CROSSING
    assert verify(paths[0]) == []


def _specs(doc) -> list:
    return [
        TensorSpec(o["id"], tuple(o["shape"]), o["format"], o["layout"])
        if o["kind"] == "tensor"
        else ResourceSpec(o["id"], o["bytes"])
        for o in doc["objects"]
    ]


def _writer(path: Path, doc, **kw) -> ArtifactWriter:
    return ArtifactWriter(
        path,
        objects=_specs(doc),
        components=doc["components"],
        bindings=doc["bindings"],
        uses=doc["uses"],
        metadata=doc["metadata"],
        provenance=doc["provenance"],
        min_json_bytes=65_504,
        **kw,
    )


def test_writer_rebuilds_example_text_single_file(tmp_path: Path) -> None:
    doc = load_example(EXAMPLE_TEXT)
    with _writer(tmp_path / "artifact-v3-text.ninfer", doc) as writer:
        for spec in _specs(doc):
            writer.write_zeros(spec.id, writer.object_bytes(spec.id))
        (entry,) = writer.finish()
    assert os.path.getsize(entry) == EX1_SIZE
    with open_artifact(entry) as artifact:
        assert [(f.path, f.payload_bytes) for f in artifact.directory.files] == [
            (None, EX1_PAYLOAD)
        ]
        _check_objects(artifact, EX1)


def test_writer_rebuilds_example_sharded_with_limit_64e6(tmp_path: Path) -> None:
    doc = load_example(EXAMPLE_SHARDED)
    emb_cut = 63_934_464 - 12_836_608  # where w.embedding meets file 1, in object bytes
    with _writer(tmp_path / EX2_NAME, doc, limit=64_000_000) as writer:
        for spec in _specs(doc):
            size = writer.object_bytes(spec.id)
            if spec.id == "w.embedding":  # streamed in three chunks, markers across the cut
                writer.write_zeros(spec.id, emb_cut - 64)
                writer.write(spec.id, _marker(128, 9))
                writer.write_zeros(spec.id, size - emb_cut - 64)
            else:
                writer.write_zeros(spec.id, size)
        paths = writer.finish()
    assert [p.name for p in paths] == [EX2_NAME, EX2_NAME + ".part-0001", EX2_NAME + ".part-0002"]
    assert [os.path.getsize(p) for p in paths] == EX2_SIZES
    with open_artifact(paths[0]) as artifact:
        files = artifact.directory.files
        assert [(f.path, f.payload_bytes) for f in files] == EX2_FILES
        assert [f.logical_start for f in files] + [files[-1].logical_end] == EX2_PREFIXES
        assert artifact.header.json_bytes == 65_504
        _check_objects(artifact, EX2)
        emb = artifact.object_bytes("w.embedding")
        assert bytes(emb[emb_cut - 64 : emb_cut + 64]) == _marker(128, 9)
    # The marker really lies in two files: last 64 payload bytes of the entry, first of part 1.
    with open(paths[0], "rb") as fh:
        fh.seek(64_000_000 - 64)
        assert fh.read() == _marker(128, 9)[:64]
    with open(paths[1], "rb") as fh:
        fh.seek(4096)
        assert fh.read(64) == _marker(128, 9)[64:]
    text = format_text(describe(paths[0]))
    for p in paths:
        assert p.name in text
    assert "w.embedding (files 0 and 1)" in text and "w.head (files 1 and 2)" in text


@pytest.mark.parametrize("limit", [64_000_000])
def test_example_sharded_file_table_written_without_min_reserve_differs(
    tmp_path: Path, limit: int
) -> None:
    """Open question Q2: without the illustrative 65,504 reserve the writer picks the smallest
    reserve (compact JSON of 5,300-ish bytes gives json_bytes 8,160), so the entry grows."""
    doc = load_example(EXAMPLE_SHARDED)
    writer = ArtifactWriter(
        tmp_path / EX2_NAME,
        objects=_specs(doc),
        components=doc["components"],
        bindings=doc["bindings"],
        uses=doc["uses"],
        metadata=doc["metadata"],
        provenance=doc["provenance"],
        limit=limit,
    )
    with writer:
        assert len(writer.json_text) == 8_160
        # entry_capacity = floor((64e6 − 8192) / 4096) · 4096
        assert writer.files[0].payload_bytes == 63_991_808
