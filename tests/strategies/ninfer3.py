"""Test helpers and Hypothesis strategies for `.ninfer` v3 (spec/ninfer3.md §framing, §directory,
§examples).

`build_file_set` writes a file set by hand with `struct` and the magic bytes spelled out from
the spec, independently of the writer under test, so reader tests do not trust the writer.
`raises_rule(Class, "rule.id")` asserts the exact error class and rule id; the rule-table test
scans test sources for these calls to prove every rule id is raised by some test.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

#: The two published example directories (spec/ninfer3.md §examples), byte for byte, kept in the
#: tree.
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "ninfer3-examples"
EXAMPLE_TEXT = EXAMPLES / "artifact-v3-text.json"
EXAMPLE_SHARDED = EXAMPLES / "artifact-v3-mixed-sharded.json"

ENTRY_MAGIC = bytes.fromhex("4e494e4645520003")  # "NINFER\0\3", spec/ninfer3.md §entry-header
PART_MAGIC = bytes.fromhex("4e494e5052540003")  # "NINPRT\0\3", spec/ninfer3.md §volume-header
FIXED_ID = bytes(range(16))  # the spec/ninfer3.md §framing-numbers hand-made files use 00 01 .. 0f


def tiny_doc() -> dict[str, Any]:
    """The spec/ninfer3.md §framing-numbers hand-made tiny single file's directory: 265-byte
    payload, 3 objects."""
    return {
        "components": {"text": {"config": {}, "resources": {"greeting": "r.hello"}}},
        "objects": [
            _tensor("w.bf16", [4], "bf16", 0, 8),
            _tensor("w.scalar", [], "fp32", 256, 4),
            {"id": "r.hello", "kind": "resource", "encoding": "raw_bytes_v1"}
            | {"offset": 260, "bytes": 5},
        ],
        "bindings": {
            "p.vec": {"object": "w.bf16"},
            "p.split": {
                "parts": [
                    {"object": "w.bf16", "range": [2, 4]},
                    {"object": "w.bf16", "range": [0, 2]},
                ]
            },
        },
        "uses": [{"parameter": "p.vec", "input": "x", "activation_policy": "A16Only"}],
        "files": [{"path": None, "payload_bytes": 265}],
        "metadata": {"name": "tiny"},
        "provenance": {},
    }


#: bf16 words 0x0000, 0x8000, 0x3F80, 0x7FC1 LE at 0; fp32 2.0 at 256; "hello" at 260
#: (spec/ninfer3.md §framing-numbers).
TINY_PAYLOAD = (
    bytes.fromhex("0000 0080 803f c17f") + bytes(248) + bytes.fromhex("00000040") + b"hello"
)


def sharded_doc() -> dict[str, Any]:
    """A small three-file set, like the C++ fixture (spec/ninfer3.md §framing-numbers): files 500 /
    780 / 64.

    A q5 [2,130] object (528 bytes) at 256 straddles the entry and part 1; a resource at
    1250..1290 straddles parts 1 and 2.
    """
    doc = tiny_doc()
    doc["objects"] = [
        _tensor("w.bf16", [4], "bf16", 0, 8),
        _tensor("w.q5", [2, 130], "q5_g64_fp16", 256, 528, "row_split_k128_v1"),
        _tensor("w.scalar", [], "fp32", 1024, 4),
        {"id": "r.hello", "kind": "resource", "encoding": "raw_bytes_v1"}
        | {"offset": 1250, "bytes": 40},
    ]
    doc["files"] = [
        {"path": None, "payload_bytes": 500},
        {"path": "weights-second.bin", "payload_bytes": 780},
        {"path": "optional.bin", "payload_bytes": 64},
    ]
    return doc


SHARDED_PAYLOAD = bytes((i * 7 + 3) % 256 for i in range(1344))


def _tensor(
    oid: str, shape: list[int], fmt: str, offset: int, size: int, layout: str = "contiguous_le_v1"
) -> dict[str, Any]:
    return {"id": oid, "kind": "tensor", "shape": shape, "format": fmt, "layout": layout} | {
        "offset": offset,
        "bytes": size,
    }


def load_example(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def encode(doc: Any) -> bytes:
    # ASCII escapes so a lone surrogate can be written as the JSON text `\ud800`.
    return json.dumps(doc, separators=(",", ":")).encode("ascii")


def build_file_set(
    directory: Path,
    entry_name: str,
    doc_or_text: dict[str, Any] | bytes,
    payload: bytes | None = None,
    *,
    json_bytes: int | None = None,
    artifact_id: bytes = FIXED_ID,
) -> list[Path]:
    """Write an entry (and continuation volumes named in `files`) by hand, per
    spec/ninfer3.md §entry-header, §volume-header.

    `payload` is the logical payload (default: zeros, left sparse with ftruncate). The JSON is
    padded with spaces to `json_bytes` (default: to the next 4096 boundary, as spec/ninfer3.md
    §writer does).
    """
    text = doc_or_text if isinstance(doc_or_text, bytes) else encode(doc_or_text)
    try:
        doc = json.loads(text) if isinstance(doc_or_text, bytes) else doc_or_text
    except ValueError:
        doc = {}
    if json_bytes is None:
        json_bytes = -(-(32 + len(text)) // 4096) * 4096 - 32
    text = text + b" " * max(0, json_bytes - len(text))
    try:
        files = doc["files"]
        sizes = [int(f["payload_bytes"]) for f in files]
        names = [str(f["path"]) for f in files[1:]]
        assert sizes and all(s >= 0 for s in sizes)
        assert all("/" not in n and "\\" not in n and n not in ".." for n in names)
    except Exception:  # a broken directory: write the entry alone, with an empty payload
        files, sizes, names = [None], [0], []
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    paths = [directory / entry_name] + [directory / n for n in names[: len(files) - 1]]
    first = -(-(32 + json_bytes) // 4096) * 4096
    for i, path in enumerate(paths):
        with open(path, "wb") as fh:
            if i == 0:
                fh.write(ENTRY_MAGIC + struct.pack("<Q", json_bytes) + artifact_id + text)
                start = first
            else:
                fh.write(PART_MAGIC + struct.pack("<Q", i) + artifact_id)
                start = 4096
            fh.truncate(start + sizes[i])
            if payload is not None:
                fh.seek(start)
                fh.write(payload[starts[i] : starts[i] + sizes[i]])
    return paths


def patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def resize(path: Path, size: int) -> None:
    os.truncate(path, size)


def mutated(doc: dict[str, Any], fn: Any) -> dict[str, Any]:
    """A deep copy of `doc` after `fn(copy)` edits it."""
    out = copy.deepcopy(doc)
    fn(out)
    return out


RULE_LOG = "NINFER3_RULE_LOG"  # when set, every rule a test saw raised is appended there


def _log_rule(error_class: str, rule: str) -> None:
    log = os.environ.get(RULE_LOG)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{error_class} {rule}\n")


@contextlib.contextmanager
def raises_rule(cls: type[BaseException], rule: str) -> Iterator[pytest.ExceptionInfo[Any]]:
    """Exactly error class `cls` (not a subclass or superclass) with rule id `rule`."""
    with pytest.raises(BaseException) as info:
        yield info
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    assert info.value.rule == rule, f"{info.value.rule} != {rule}: {info.value}"
    _log_rule(info.value.violation.error_class, rule)


def expect_violations(found: list[Any], want: list[tuple[str, str, str | None]]) -> None:
    """`verify` found exactly these (error class, rule, path) violations, in order."""
    assert [(v.error_class, v.rule, v.path) for v in found] == want
    for error_class, rule, _ in want:
        _log_rule(error_class, rule)


# -- Hypothesis strategies ----------------------------------------------------------------------

ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=12,
)

TENSOR_KINDS = [
    ("bf16", "contiguous_le_v1"),
    ("fp32", "contiguous_le_v1"),
    ("int32", "contiguous_le_v1"),
    ("q4_g64_fp16", "row_split_k128_v1"),
    ("q5_g64_fp16", "row_split_k128_v1"),
    ("q6_g64_fp16", "row_split_k128_v1"),
    ("q8_g32_fp16", "row_split_k128_v1"),
    ("nvfp4", "block_scale_k16_m128x4_v1"),
    ("t2_g128_fp16", "row_split_k128_v1"),
    ("fp8_e4m3fn_row_bf16", "row_scale_v1"),
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), inner)
    ),
    max_leaves=8,
)


@st.composite
def tensor_specs(draw: st.DrawFn, object_id: str) -> Any:
    from weightfile.ref.ninfer3.plan import TensorSpec

    fmt, layout = draw(st.sampled_from(TENSOR_KINDS))
    if layout == "contiguous_le_v1":
        shape = tuple(draw(st.lists(st.integers(1, 5), max_size=3)))
    elif layout == "block_scale_k16_m128x4_v1":  # N % 128 == 0 and K % 64 == 0
        shape = (128 * draw(st.integers(1, 2)), 64 * draw(st.integers(1, 2)))
    else:
        shape = (draw(st.integers(1, 3)), draw(st.integers(1, 200)))
    return TensorSpec(object_id, shape, fmt, layout)


@st.composite
def directories(draw: st.DrawFn) -> dict[str, Any]:
    """Keyword arguments for `ArtifactWriter`: random objects, parts, uses, components,
    resources, metadata and a size limit, all legal."""
    from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
    from weightfile.spec.ninfer3.domains import elements

    specs: list[Any] = []
    for i in range(draw(st.integers(1, 6))):
        object_id = f"o{i}.{draw(ids)}"  # the prefix keeps ids unique
        if draw(st.booleans()):
            specs.append(draw(tensor_specs(object_id)))
        else:
            specs.append(ResourceSpec(object_id, draw(st.integers(1, 20_000))))
    # A bulk resource at a random place makes multi-file sets common under the small limits.
    bulk = draw(st.sampled_from([0, 3000, 9000, 20_000])) + draw(st.integers(0, 4096))
    if bulk:
        specs.insert(draw(st.integers(0, len(specs))), ResourceSpec("bulk", bulk))
    tensors = [s for s in specs if isinstance(s, TensorSpec)]
    resources = [s.id for s in specs if isinstance(s, ResourceSpec)]
    bindings: dict[str, Any] = {}
    for j in range(draw(st.integers(0, 4)) if tensors else 0):
        if draw(st.booleans()):
            bindings[f"p{j}/whole"] = {"object": draw(st.sampled_from(tensors)).id}
            continue
        parts = []
        for _ in range(draw(st.integers(1, 3))):
            parent = draw(st.sampled_from(tensors))
            count = elements(parent.shape)
            begin = draw(st.integers(0, count - 1))
            end = draw(st.integers(begin + 1, count))
            parts.append({"object": parent.id, "range": [begin, end]})
        bindings[f"p{j}/parts"] = {"parts": parts}
    uses = []
    for parameter in bindings:
        for use_input in draw(st.lists(ids, max_size=2, unique=True)):
            use: dict[str, Any] = {"parameter": parameter, "input": use_input}
            policy = draw(st.sampled_from([None, "A16Only", "AllowA8", "AllowA4"]))
            if policy:
                use["activation_policy"] = policy
            uses.append(use)
    text: dict[str, Any] = {"config": draw(st.dictionaries(ids, json_values, max_size=3))}
    if resources:
        text["resources"] = draw(st.dictionaries(ids, st.sampled_from(resources), max_size=3))
    components = {"text": text}
    if draw(st.booleans()):
        components["vision"] = {"config": {}, "target": "text"}
    limit = draw(st.sampled_from([None, 8_193, 8_300, 9_000, 12_289, 16_384]))
    return {
        "objects": specs,
        "components": components,
        "bindings": bindings,
        "uses": uses,
        "metadata": draw(st.sampled_from([{}, {"name": "random"}])),
        "provenance": {"by": "hypothesis"},
        **({"limit": limit} if limit else {}),
    }
