"""`describe`, `verify` and the text `weightfile inspect` prints (commands/inspect.py) for
`.ninfer` files (spec/ninfer3.md §header-checks step 7, §validation)."""

from __future__ import annotations

import json
from pathlib import Path

from strategies.ninfer3 import (
    SHARDED_PAYLOAD,
    TINY_PAYLOAD,
    build_file_set,
    expect_violations,
    mutated,
    patch,
    sharded_doc,
    tiny_doc,
)

from weightfile.commands.inspect import format_ninfer3 as format_text
from weightfile.ref.ninfer3.describe import describe, verify


def test_description_of_the_sharded_set(tmp_path: Path) -> None:
    paths = build_file_set(tmp_path, "s.ninfer", sharded_doc(), SHARDED_PAYLOAD)
    d = describe(paths[0])
    assert json.loads(json.dumps(d)) == d  # JSON-serialisable
    assert d["header"]["artifact_id"] == "000102030405060708090a0b0c0d0e0f"
    assert d["header"]["json_bytes"] == 4064 and d["payload_bytes"] == 1344
    # spec/ninfer3.md §header-checks step 7: entry_payload_start + Σ payload_bytes + 4096 × (files −
    # 1)
    assert d["file_bytes"] == 4096 + 1344 + 4096 * 2
    assert [(f["name"], f["file_bytes"], f["actual_bytes"]) for f in d["files"]] == [
        ("s.ninfer", 4596, 4596),
        ("weights-second.bin", 4876, 4876),
        ("optional.bin", 4160, 4160),
    ]
    spans = {o["id"]: o["files"] for o in d["objects"]}
    assert spans == {"w.bf16": [0], "w.q5": [0, 1], "w.scalar": [1], "r.hello": [1, 2]}
    assert d["components"][0]["resources"] == {"greeting": "r.hello"}
    assert d["bindings"][1]["parts"][0] == {"object": "w.bf16", "range": [2, 4]}
    assert d["uses"][0]["activation_policy"] == "A16Only"
    text = format_text(d)
    for needle in ("weights-second.bin", "optional.bin", "w.q5 (files 0 and 1)", "A16Only"):
        assert needle in text
    assert verify(paths[0]) == []


def test_missing_volume_is_reported_by_describe_not_raised(tmp_path: Path) -> None:
    paths = build_file_set(tmp_path, "s.ninfer", sharded_doc(), SHARDED_PAYLOAD)
    paths[2].unlink()
    d = describe(paths[0])
    assert d["files"][2]["actual_bytes"] is None
    assert "missing" in format_text(d)


def test_verify_lists_every_violation(tmp_path: Path) -> None:
    def fn(d: dict) -> None:
        d["objects"][0]["format"] = "bf17"
        d["objects"][2]["bytes"] = 4  # fp32 [] is 4 bytes: valid
        d["objects"][3]["encoding"] = "zip"

    paths = build_file_set(tmp_path, "s.ninfer", mutated(sharded_doc(), fn), SHARDED_PAYLOAD)
    patch(paths[1], 8, b"\x07")  # part_index 7 in volume 1
    paths[2].unlink()
    expect_violations(
        verify(paths[0]),
        [
            ("InvalidError", "ninfer3.object.format", "objects[0]"),
            ("InvalidError", "ninfer3.object.encoding", "objects[3].encoding"),
            ("InvalidError", "ninfer3.part.index", "files[1]"),
            ("MalformedError", "ninfer3.part.missing", "files[2]"),
        ],
    )


def test_verify_reports_the_first_open_time_failure(tmp_path: Path) -> None:
    doc = mutated(tiny_doc(), lambda d: d["objects"][2].update(id="w.bf16"))
    (entry,) = build_file_set(tmp_path, "t.ninfer", doc, TINY_PAYLOAD)
    expect_violations(verify(entry), [("InvalidError", "ninfer3.objects.id_unique", "objects[2]")])
