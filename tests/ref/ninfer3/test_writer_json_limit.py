"""The writer refuses a directory the reader would refuse (spec/ninfer3.md §safe-files): JSON longer
than the reader's cap is `ninfer3.writer.json_limit`, before any file is created. The cap is the
reader's own constant, so the test lowers it (256 MiB of JSON is too slow for a unit test) and
shows both sides move together: at the cap the file is written and read back; one byte above, the
writer refuses, and the reader would refuse the same file with `ninfer3.header.json_limit`."""

from __future__ import annotations

import os

from strategies.ninfer3 import raises_rule

from weightfile.ref.ninfer3 import read
from weightfile.ref.ninfer3.plan import ResourceSpec
from weightfile.ref.ninfer3.write import ArtifactWriter, write_artifact
from weightfile.spec.errors import UnsupportedError


def _kwargs(min_json_bytes: int) -> dict:
    return {
        "objects": [ResourceSpec("r.blob", 16)],
        "components": {"text": {"config": {}, "resources": {"blob": "r.blob"}}},
        "min_json_bytes": min_json_bytes,
    }


def _json_bytes(folder) -> int:
    """The JSON length this directory gets (a writer that is aborted, leaving nothing)."""
    with ArtifactWriter(folder / "probe.ninfer", **_kwargs(20_000)) as probe:
        n = len(probe.json_text)
    assert os.listdir(folder) == []
    return n


def test_the_cap_is_the_documented_256_mib():
    assert read.MAX_JSON_BYTES == 268_435_456  # spec/ninfer3.md §safe-files


def test_writer_refuses_json_above_the_reader_cap(tmp_path, monkeypatch):
    json_bytes = _json_bytes(tmp_path)
    monkeypatch.setattr(read, "MAX_JSON_BYTES", json_bytes - 1)
    with raises_rule(UnsupportedError, "ninfer3.writer.json_limit"):
        ArtifactWriter(tmp_path / "m.ninfer", **_kwargs(20_000))
    assert os.listdir(tmp_path) == []  # nothing created, not even a temp


def test_at_the_cap_written_and_read_one_above_refused_by_both(tmp_path, monkeypatch):
    entry = tmp_path / "m.ninfer"
    json_bytes = _json_bytes(tmp_path)
    monkeypatch.setattr(read, "MAX_JSON_BYTES", json_bytes)
    write_artifact(entry, {"r.blob": b"x" * 16}, **_kwargs(20_000))
    with read.open_artifact(entry) as artifact:
        assert bytes(artifact.object_bytes("r.blob")) == b"x" * 16
    monkeypatch.setattr(read, "MAX_JSON_BYTES", json_bytes - 1)
    with raises_rule(UnsupportedError, "ninfer3.header.json_limit"):
        read.open_artifact(entry)
