"""Seeds and mutators for the fuzz campaign (issue 14 item 6).

A seed is a whole file set: a VQF file, or a `.ninfer` entry with its continuation volumes (and any
external files its directory names), taken from the committed conformance corpus and from the two
published example directories in tests/data. A mutation is a short list of edits chosen through a
`Draw` (``draw(lo, hi)`` returns an int in [lo, hi]): Hypothesis drives it in the CI test (so a
failure shrinks), `random.Random.randint` drives it in tools/fuzz_campaign.py.

Byte edits aim mostly at the head of a file (header, directory, JSON), where the structure is;
`.ninfer` entries also get JSON edits: the directory is parsed, one node is replaced, deleted,
duplicated or renamed, and the entry is re-framed (spec/ninfer3.md §1.1) so the new text is read.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Draw = Callable[[int, int], int]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "conformance" / "corpus"
EXAMPLES = ROOT / "tests" / "data" / "ninfer3-examples"
ENTRY_MAGIC = bytes.fromhex("4e494e4645520003")  # "NINFER\0\3", spec/ninfer3.md §1.1
EXAMPLE_ID = bytes(range(16))

#: Boundary integers: zero, small, powers of two and their neighbours, the width limits.
INTERESTING_INTS = sorted(
    {0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 63, 64, 127, 128, 255, 256, 4095, 4096, 4097}
    | {2**15 - 1, 2**15, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32}
    | {2**53, 2**63 - 1, 2**63, 2**64 - 1}
)
INTERESTING_JSON: list[Any] = [
    *(None, True, False, "", "x", "../etc", "a/b", "\ud800", [], {}, [0], [0, 0], [2, 1]),
    *(-1, -(2**63), 0.5, 1e308, math.nan, math.inf, -0.0, 1.5),
    *("bf16", "fp32", "fp16", "fp8_e4m3", "q4_g64_fp16", "q8_g32_fp16", "nvfp4"),
    *("contiguous_le_v1", "row_split_k128_v1", "row_scale_v1", "raw_bytes_v1"),
    *("block_scale_k16_m128x4_v1", "tensor", "resource", "A16Only"),
    *INTERESTING_INTS,
]


@dataclass
class Seed:
    """One seed file set: `files` maps a file name to its bytes; `entry` is the one to open."""

    name: str
    format: str  # "vqf" | "ninfer3"
    entry: str
    files: dict[str, bytes]
    decode: bool = True  # False: the set is too big to decode per input (sparse examples)
    sparse: dict[str, int] = field(default_factory=dict)  # name -> size to extend with zeros


def _ninfer_sets() -> list[Seed]:
    seeds = []
    for entry in sorted(CORPUS.glob("ninfer3/**/*.ninfer")):
        files = {
            p.name: p.read_bytes()
            for p in sorted(entry.parent.iterdir())
            if p.is_file() and p.name not in ("case.json", "want.json")
        }
        if files[entry.name][:8] != ENTRY_MAGIC:
            continue  # a wrong-magic case is a fine seed for bytes but not a set
        rel = entry.parent.relative_to(CORPUS)
        seeds.append(Seed(str(rel), "ninfer3", entry.name, files))
    return seeds


def _example_sets() -> list[Seed]:
    """The published example directories framed as entries with sparse payloads (not decoded:
    their payloads are 140 MB and 64 MB of zeros)."""
    seeds = []
    for path in sorted(EXAMPLES.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        stem = path.stem
        entry = stem + ".ninfer"
        text = json.dumps(doc, separators=(",", ":")).encode("ascii")
        sizes = [int(f["payload_bytes"]) for f in doc["files"]]
        names = [entry] + [str(f["path"]) for f in doc["files"][1:]]
        files = {entry: _frame(text, b"")}
        sparse = {entry: len(files[entry]) + sizes[0]}
        for i, (name, size) in enumerate(zip(names[1:], sizes[1:], strict=True), start=1):
            files[name] = b"NINPRT\x00\x03" + struct.pack("<Q", i) + EXAMPLE_ID + bytes(4064)
            sparse[name] = 4096 + size
        # Renamed volumes must match the directory's `files[].path`; ours are named so.
        seeds.append(Seed(f"examples/{stem}", "ninfer3", entry, files, False, sparse))
    return seeds


def load_seeds(fmt: str) -> list[Seed]:
    """Every seed of one format ("vqf" or "ninfer3"), in a fixed order."""
    if fmt == "vqf":
        paths = [*sorted(CORPUS.glob("vqf/**/*.vqf")), ROOT / "weightfile/data/tiny-qwen3-q4.vqf"]
        out = []
        for p in paths:
            rel = p.relative_to(ROOT)
            out.append(Seed(str(rel.parent), "vqf", p.name, {p.name: p.read_bytes()}))
        return out
    if fmt == "ninfer3":
        return _ninfer_sets() + _example_sets()
    raise ValueError(fmt)


# --------------------------------------------------------------------------------------------
# byte edits


def _offset(draw: Draw, size: int) -> int:
    if size == 0:
        return 0
    if draw(0, 3):  # mostly the head: headers, directories, JSON text
        return draw(0, min(size, 4096 + 448) - 1)
    return draw(0, size - 1)


def mutate_bytes(data: bytes, draw: Draw) -> bytes:
    """One byte-level edit of `data`."""
    b = bytearray(data)
    n = len(b)
    op = draw(0, 9)
    if op == 0 and n:  # flip one bit
        i = _offset(draw, n)
        b[i] ^= 1 << draw(0, 7)
    elif op == 1 and n:  # one random byte
        b[_offset(draw, n)] = draw(0, 255)
    elif op in (2, 3) and n >= 8:  # an interesting integer, little endian, often aligned
        width = (1, 2, 4, 8)[draw(0, 3)]
        i = _offset(draw, max(1, n - width))
        if draw(0, 1):
            i -= i % width
        v = INTERESTING_INTS[draw(0, len(INTERESTING_INTS) - 1)] + draw(-1, 1)
        v %= 1 << (8 * width)
        b[i : i + width] = v.to_bytes(width, "little")
    elif op == 4 and n:  # delete a run
        i = _offset(draw, n)
        del b[i : i + draw(1, 64)]
    elif op == 5:  # insert a run of zeros, 0xff or a copy
        i = _offset(draw, n) if n else 0
        k = draw(1, 64)
        kind = draw(0, 2)
        run = bytes(k) if kind == 0 else b"\xff" * k if kind == 1 else bytes(b[i : i + k])
        b[i:i] = run
    elif op == 6 and n:  # truncate
        del b[draw(0, n - 1) :]
    elif op == 7:  # extend
        b += bytes(draw(1, 8192))
    elif op == 8 and n >= 2:  # copy a chunk over another place
        src, dst = _offset(draw, n), _offset(draw, n)
        k = draw(1, 64)
        chunk = bytes(b[src : src + k])
        b[dst : dst + len(chunk)] = chunk
    elif n:  # overwrite a run with one byte value
        i = _offset(draw, n)
        k = draw(1, 32)
        b[i : i + k] = bytes([draw(0, 255)]) * len(b[i : i + k])
    return bytes(b)


# --------------------------------------------------------------------------------------------
# JSON edits of a .ninfer entry (framing: spec/ninfer3.md §1.1)


def _frame(text: bytes, payload: bytes, artifact_id: bytes = EXAMPLE_ID) -> bytes:
    """An entry: magic, json_bytes, artifact id, the text padded with spaces to the 4096
    boundary, then the payload (spec/ninfer3.md §1.1)."""
    json_bytes = -(-(32 + len(text)) // 4096) * 4096 - 32
    text = text + b" " * (json_bytes - len(text))
    return ENTRY_MAGIC + struct.pack("<Q", json_bytes) + artifact_id + text + payload


def split_entry(entry: bytes) -> tuple[Any, bytes, bytes] | None:
    """(directory, artifact id, payload) of a well-framed entry, else None."""
    if len(entry) < 32 or entry[:8] != ENTRY_MAGIC:
        return None
    (json_bytes,) = struct.unpack_from("<Q", entry, 8)
    start = -(-(32 + json_bytes) // 4096) * 4096
    if json_bytes < 1 or start > len(entry):
        return None
    try:
        doc = json.loads(entry[32 : 32 + json_bytes])
    except ValueError:
        return None
    return doc, entry[16:32], entry[start:]


def _nodes(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every path into `doc` (dict keys and list indexes), the root excluded."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*path, k))
            out.extend(_nodes(v, (*path, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((*path, i))
            out.extend(_nodes(v, (*path, i)))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def mutate_json(doc: Any, draw: Draw) -> Any:
    """One structural edit of a parsed directory (in place on a copy; returns the copy)."""
    doc = json.loads(json.dumps(doc))
    nodes = _nodes(doc)
    if not nodes:
        return INTERESTING_JSON[draw(0, len(INTERESTING_JSON) - 1)]
    path = nodes[draw(0, len(nodes) - 1)]
    parent, key = _get(doc, path[:-1]), path[-1]
    op = draw(0, 5)
    if op <= 1:  # an interesting value
        parent[key] = INTERESTING_JSON[draw(0, len(INTERESTING_JSON) - 1)]
    elif op == 2:  # a value from elsewhere in the document
        parent[key] = json.loads(json.dumps(_get(doc, nodes[draw(0, len(nodes) - 1)])))
    elif op == 3:  # delete
        del parent[key]
    elif op == 4:  # duplicate a list element / rename a key
        if isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        else:
            parent[f"{key}_"] = parent.pop(key)
    else:  # a number nudged by one
        v = parent[key]
        if isinstance(v, int) and not isinstance(v, bool):
            parent[key] = v + (1 if draw(0, 1) else -1)
        elif isinstance(v, list) and v:
            parent[key] = v[::-1]
        else:
            parent[key] = None
    return doc


def reframe(entry: bytes, doc: Any) -> bytes:
    """`entry` with its directory replaced by `doc` (NaN and Infinity written as Python does,
    which is not JSON: the reader must refuse them with its own error)."""
    parts = split_entry(entry)
    assert parts is not None
    _, artifact_id, payload = parts
    text = json.dumps(doc, separators=(",", ":")).encode("ascii")
    return _frame(text, payload, artifact_id)


# --------------------------------------------------------------------------------------------
# a whole mutation of a seed


def mutate(seed: Seed, draw: Draw) -> dict[str, bytes | None]:
    """A mutated copy of a seed's files: name -> bytes (None: the file is removed). 1-4 edits."""
    files: dict[str, bytes | None] = dict(seed.files)
    names = sorted(seed.files)
    for _ in range(draw(1, 4)):
        name = seed.entry if draw(0, 2) or len(names) == 1 else names[draw(0, len(names) - 1)]
        data = files[name]
        if data is None:
            continue
        kind = draw(0, 9)
        if seed.format == "ninfer3" and name == seed.entry and kind < 4:
            parts = split_entry(data)
            if parts is not None:
                files[name] = reframe(data, mutate_json(parts[0], draw))
                continue
        if kind == 9 and name != seed.entry:  # a volume goes missing
            files[name] = None
            continue
        files[name] = mutate_bytes(data, draw)
    return files


def write_set(folder: Path, seed: Seed, files: dict[str, bytes | None]) -> Path:
    """Write a mutated set into an empty `folder`; returns the entry's path."""
    for name, data in files.items():
        if data is None:
            continue
        p = folder / name
        p.write_bytes(data)
        size = seed.sparse.get(name)
        if size is None:
            continue
        if name == seed.entry:
            parts = split_entry(data)
            if parts is not None:  # keep the sparse payload the directory expects
                want = len(data) - len(parts[2]) + size - len(seed.files[name])
                os.truncate(p, max(len(data), want))
        elif len(data) == len(seed.files[name]):  # an edited (not cut) volume keeps its size
            os.truncate(p, size)
    return folder / seed.entry
