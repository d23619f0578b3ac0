"""Hostile input never crashes the reader: any byte flips in a valid file, and any JSON value
as the directory, give either a valid artifact or a `WeightfileError` with a rule id from the
table — never a raw KeyError/TypeError/IndexError (standards; spec/ninfer3.md §validation)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies.ninfer3 import (
    SHARDED_PAYLOAD,
    build_file_set,
    encode,
    json_values,
    sharded_doc,
)

from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.errors import WeightfileError
from weightfile.spec.ninfer3.rules import RULES


def _exercise(entry: Path) -> None:
    """Open and use everything; only our errors may escape."""
    try:
        with open_artifact(entry) as artifact:
            for object_id in artifact.directory.objects_by_id:
                try:
                    artifact.object_bytes(object_id)
                except WeightfileError as exc:
                    assert exc.rule in RULES
            for name, binding in artifact.directory.bindings.items():
                try:
                    shape = artifact.directory.objects_by_id[
                        binding.object_id or binding.parts[0].object_id  # type: ignore[index]
                    ].shape
                    artifact.bind(name, shape or ())
                except WeightfileError as exc:
                    assert exc.rule in RULES
    except WeightfileError as exc:
        assert exc.rule in RULES
    assert all(v.rule in RULES for v in verify(entry))


@given(flips=st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), min_size=1, max_size=4))
def test_byte_flips_in_header_and_json(flips: list[tuple[int, int]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = build_file_set(Path(folder), "s.ninfer", sharded_doc(), SHARDED_PAYLOAD)
        raw = bytearray(paths[0].read_bytes())
        text_end = 32 + len(encode(sharded_doc()))
        for position, value in flips:
            raw[position % text_end] = value  # hit the header and the JSON text
        paths[0].write_bytes(bytes(raw))
        _exercise(paths[0])


@given(directory=json_values)
def test_any_json_value_as_the_directory(directory: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        text = encode(directory)
        entry = Path(folder) / "x.ninfer"
        build_file_set(Path(folder), "x.ninfer", text)
        _exercise(entry)


@given(
    section=st.sampled_from(["files", "objects", "components", "bindings", "uses", "metadata"]),
    value=json_values,
)
def test_any_json_value_in_one_section(section: str, value: Any) -> None:
    doc = sharded_doc()
    doc[section] = value
    with tempfile.TemporaryDirectory() as folder:
        paths = build_file_set(Path(folder), "s.ninfer", encode(doc), SHARDED_PAYLOAD)
        _exercise(paths[0])
