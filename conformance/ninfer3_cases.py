"""The `.ninfer` v3 container cases: valid file sets and one invalid set per file rule.

Valid sets cover the header layouts (JSON space-padded to a 4096 boundary, the raw JSON length
with a zero-filled alignment area, a larger JSON reserve), single files and sharded sets with
continuation volumes (a small explicit writer limit keeps them tiny), every tensor (format,
layout) pair and resources. Before a case is kept, the reference `verify` must find no violation
(valid) or exactly the targeted rule (invalid); the framing numbers of spec/ninfer3.md
§framing-numbers are checked against the files written (see SPEC_CHECKS in
conformance/spec_numbers.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.spec.codecs.ninfer3.formats import FORMATS, GroupedFormat
from weightfile.spec.codecs.ninfer3.registry import CODECS
from weightfile.spec.ninfer3.rules import RULES

from . import seeded
from .case_types import Case, ValidCase
from .codec_cases import grouped_extremes, nvfp4_words
from .ninfer3_describe import describe_ninfer3
from .ninfer3_files import ENTRY_NAME, FIXED_ID, sharded_set, tiny_set, write_set
from .ninfer3_mutations import CASES
from .sections import published_section

#: One small tensor per registered (format, layout) pair (nvfp4 needs N % 128 == 0, K % 64 == 0).
PAIR_SHAPES: dict[str, tuple[int, ...]] = {
    "bf16": (3, 5),
    "fp32": (2, 3),
    "int32": (7,),
    "q4_g64_fp16": (2, 130),
    "q5_g64_fp16": (2, 130),
    "q6_g64_fp16": (1, 64),
    "q8_g32_fp16": (3, 40),
    "t2_g128_fp16": (2, 200),
    "nvfp4": (128, 64),
    "fp8_e4m3fn_row_bf16": (2, 48),
}


def pair_payload(fmt: str, layout: str, shape: tuple[int, ...]) -> bytes:
    """Seeded content under the canonical encoder, or legal words where no encoder exists."""
    codec = get_codec(fmt, layout)
    if codec.encoder is not None:
        if fmt == "int32":
            return codec.encode(seeded.integers(11, shape), shape)
        return codec.encode(seeded.uniform(11, shape, 2.0), shape)
    if fmt == "nvfp4":
        return codec.encode_words(nvfp4_words((shape[0], shape[1])), shape)
    grouped = FORMATS[fmt]
    assert isinstance(grouped, GroupedFormat)
    return codec.encode_words(grouped_extremes(grouped, (shape[0], shape[1])), shape)


def every_pair(folder: Path) -> None:
    """Every tensor pair plus a resource, split into volumes under a 10,240-byte limit
    (spec/ninfer3.md §writer)."""
    specs: list[Any] = []
    data: dict[str, bytes] = {}
    for fmt, layout in (k for k in CODECS if k[0] is not None):
        assert fmt is not None
        oid = f"w.{fmt}"
        specs.append(TensorSpec(oid, PAIR_SHAPES[fmt], fmt, layout))
        data[oid] = pair_payload(fmt, layout, PAIR_SHAPES[fmt])
    specs.append(ResourceSpec("r.note", 13))
    data["r.note"] = b"every format."
    bindings = {f"p.{s.id[2:]}": {"object": s.id} for s in specs if isinstance(s, TensorSpec)}
    uses = [{"parameter": "p.q4_g64_fp16", "input": "x", "activation_policy": "AllowA8"}]
    write_artifact(folder / ENTRY_NAME, data, objects=specs, bindings=bindings, uses=uses,
                   components={"text": {"config": {}, "resources": {"note": "r.note"}}},
                   limit=10_240, artifact_id=FIXED_ID)  # fmt: skip


def large_resource(folder: Path) -> None:
    """spec/ninfer3.md §framing-numbers: one 27,610-byte resource under limit 12,288 gives files
    8192/8192/8192/3034."""
    blob = bytes((i * 31 + 7) % 251 for i in range(27_610))
    write_artifact(folder / "large.ninfer", {"r.large": blob},
                   objects=[ResourceSpec("r.large", 27_610)],
                   components={"text": {"config": {}, "resources": {"blob": "r.large"}}},
                   limit=12_288, artifact_id=FIXED_ID)  # fmt: skip


def big_reserve(folder: Path) -> None:
    """The tiny directory with an 8,160-byte JSON reserve: the payload starts at 8192
    (spec/ninfer3.md §writer)."""
    write_set(folder, tiny_set(json_bytes=8160))


VALID = (
    ValidCase("single", "tiny", "the §1.9 hand-made tiny file (JSON space-padded to 4064)",
             lambda f: write_set(f, tiny_set())),
    ValidCase("single", "reserve-8160", "JSON reserve 8160: payload at 8192", big_reserve),
    ValidCase("sharded", "cpp-fixture", "§1.9 C++ fixture: files 500/780/64, raw json_bytes, "
             "objects straddling volumes", lambda f: write_set(f, sharded_set())),
    ValidCase("sharded", "every-pair", "every tensor (format, layout) pair and a resource, "
             "written by the reference writer under limit 10240", every_pair),
    ValidCase("sharded", "large-resource", "§1.9: a 27,610-byte resource under limit 12,288",
             large_resource),
)  # fmt: skip


def entry_of(folder: Path) -> Path:
    """The one entry file of a case folder (the only file starting with the entry magic)."""
    [entry] = [p for p in sorted(folder.iterdir()) if p.read_bytes()[:6] == b"NINFER"]
    return entry


def folder_parts(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def valid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, input files, want.json) of every valid set."""
    for case in VALID:
        folder = scratch / f"valid-{case.topic}-{case.name}"
        folder.mkdir()
        case.write(folder)
        entry = entry_of(folder)
        found = verify(entry)
        if found:
            raise RuntimeError(f"valid case {case.name} is invalid: {[str(v) for v in found]}")
        with open_artifact(entry) as artifact:
            want = describe_ninfer3(artifact)
        meta = {"expect": "accept", "input": entry.name, "description": case.meaning}
        yield f"{prefix}/valid/{case.topic}/{case.name}", meta, folder_parts(folder), want


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One invalid set per rule of the mutation table, checked to break exactly that rule."""
    for rule_id in sorted(CASES):
        meaning, write = CASES[rule_id]
        folder = scratch / f"invalid-{rule_id}"
        folder.mkdir()
        write(folder)
        found = [v.rule for v in verify(folder / ENTRY_NAME)]
        if found != [rule_id]:
            raise RuntimeError(f"case {rule_id} breaks {found}, not [{rule_id}]")
        rule = RULES[rule_id]
        _, topic, name = rule_id.split(".")
        meta = {"expect": "reject", "input": ENTRY_NAME, "rule": rule_id,
                "error_class": rule.error_class,
                "accepted": [{"rule": rule_id, "error_class": rule.error_class}],
                "section": published_section(rule),
                "description": f"{rule.meaning}: {meaning}"}  # fmt: skip
        yield f"{prefix}/invalid/{topic}/{name}", meta, folder_parts(folder), None
