"""Seeds and mutators for the fuzz campaign (issue 14 item 6).

A seed is a whole file set: a VQF file, or a `.ninfer` entry with its continuation volumes (and any
external files its directory names), taken from the committed conformance corpus and from the two
published example directories in tests/data. A mutation is a short list of edits chosen through a
`Draw` (``draw(lo, hi)`` returns an int in [lo, hi]): Hypothesis drives it in the CI test (so a
failure shrinks), `random.Random.randint` drives it in tools/fuzz_campaign.py.

Byte edits aim mostly at the head of a file (header, directory, JSON), where the structure is.
Structure-aware edits go deeper: a VQF file gets one header, arch or directory-entry field set
(at its schema-derived offset) to a boundary number, a nudged value or another field's value, and
its FNV-1a-64 trailer is re-sealed (spec/vqf.md §fnv-trailer) so the input reaches the binder and
the decoders; a `.ninfer` entry gets its directory parsed, one node replaced, deleted, duplicated or
renamed — or an object/binding/file field set to a boundary number or cross-referenced to another
object — and is re-framed (spec/ninfer3.md §entry-header) so the new text is read.
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

from weightfile.spec.vqf.arch import ARRAY_FIELD_NAMES
from weightfile.spec.vqf.constants import DIRECTORY_OFFSET, ENTRY_BYTES
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.header import VQFHeader, VQFHeaderLegacy, arch_field_offset, field_offset
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.tensor import VQFTensor

Draw = Callable[[int, int], int]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "conformance" / "corpus"
EXAMPLES = ROOT / "tests" / "data" / "ninfer3-examples"
ENTRY_MAGIC = bytes.fromhex("4e494e4645520003")  # "NINFER\0\3", spec/ninfer3.md §entry-header
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
# JSON edits of a .ninfer entry (framing: spec/ninfer3.md §entry-header)


def _frame(text: bytes, payload: bytes, artifact_id: bytes = EXAMPLE_ID) -> bytes:
    """An entry: magic, json_bytes, artifact id, the text padded with spaces to the 4096
    boundary, then the payload (spec/ninfer3.md §entry-header)."""
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
# structure-aware edits of a VQF file (schemas: spec/vqf/header.py, arch.py, tensor.py)


def _fields(schema: Any, base: int = 0) -> list[tuple[str, int, int]]:
    """(name, absolute offset, width) of every integer/float word of a flat schema; the arch's
    arrays are split into their four words."""
    out = []
    for sc in schema.subcons:
        if sc.name in ("arch", "sig", "enc_iv", "enc_rsvd", "pad_arch", "magic", "name"):
            continue
        off, width = base + field_offset(schema, sc.name), sc.sizeof()
        if sc.name in ARRAY_FIELD_NAMES:
            out.extend((f"{sc.name}[{k}]", off + 4 * k, 4) for k in range(4))
        else:
            out.append((sc.name, off, width))
    return out


def _header_fields(schema: Any) -> list[tuple[str, int, int]]:
    arch = next(sc for sc in schema.subcons if sc.name == "arch").subcon
    return _fields(schema) + _fields(arch, arch_field_offset(schema, arch.subcons[0].name))


HEADER_FIELDS = {"current": _header_fields(VQFHeader), "legacy": _header_fields(VQFHeaderLegacy)}
ENTRY_FIELDS = _fields(VQFTensor)  # qtype, rows, cols, pad, offset, bytes (name apart)
_ENTRY_BYTES_AT = field_offset(VQFTensor, "bytes")
FLOAT_FIELDS = {"rope_theta", "norm_eps"}
INTERESTING_F32 = [0.0, -0.0, 1e-45, 1e-6, 1.0, 1e6, 3.4e38, math.inf, -math.inf, math.nan, -1.0]


def _u(b: bytes | bytearray, off: int, width: int) -> int:
    return int.from_bytes(b[off : off + width], "little")


def vqf_layout(data: bytes) -> str:
    """The header layout whose (data_offset, file_len) pair fits the file size (spec/vqf.md
    §legacy-header step 3, loosely: a guess for the mutator, the reader decides for real)."""
    for layout, schema in (("current", VQFHeader), ("legacy", VQFHeaderLegacy)):
        fl = _u(data, field_offset(schema, "file_len"), 8)
        if fl and len(data) in (fl + 8, fl + 32):  # FNV or HMAC-SM3 trailer
            return layout
    return "current"


def vqf_reseal(data: bytearray, layout: str) -> None:
    """Recompute the FNV-1a-64 trailer of a plaintext file in place (spec/vqf.md §fnv-trailer), when
    the header's own numbers still frame a directory, a data region and a trailer."""
    from weightfile.fast.vqf.fnv1a64 import fnv1a64  # the C kernel; imported late, it builds

    schema = VQFHeader if layout == "current" else VQFHeaderLegacy
    if len(data) < 448 or _u(data, field_offset(schema, "flags"), 4) & VQFFlag.ENC:
        return
    n = _u(data, field_offset(schema, "n_tensors"), 4)
    start, end = (
        _u(data, field_offset(schema, "data_offset"), 8),
        _u(data, field_offset(schema, "file_len"), 8),
    )
    dir_end = DIRECTORY_OFFSET + ENTRY_BYTES * n
    if not (dir_end <= start <= end and end + 8 <= len(data)):
        return
    if _u(data, end, 8) == 0:  # an unchecked (zero) trailer stays unchecked
        return
    h = fnv1a64(memoryview(data)[start:end], fnv1a64(memoryview(data)[DIRECTORY_OFFSET:dir_end]))
    data[end : end + 8] = h.to_bytes(8, "little")


def _int_value(draw: Draw, current: int, others: list[int], width: int) -> int:
    op = draw(0, 5)
    if op <= 1:
        v = INTERESTING_INTS[draw(0, len(INTERESTING_INTS) - 1)] + draw(-1, 1)
    elif op == 2:
        v = current + (1 if draw(0, 1) else -1)
    elif op == 3:
        v = current * 2 if draw(0, 1) else current // 2
    elif others:  # a cross-reference: another field's value (an offset, a size, a count)
        v = others[draw(0, len(others) - 1)] + draw(-1, 1) * (op == 5)
    else:
        v = 0
    return v % (1 << (8 * width))


def mutate_vqf_fields(data: bytes, draw: Draw) -> bytes:
    """One field of the header, the arch or one directory entry edited at its schema offset,
    then the trailer re-sealed (unless the draw keeps the stale one, 1 time in 8)."""
    layout = vqf_layout(data)
    b = bytearray(data)
    if len(b) < 448:
        return data
    schema = VQFHeader if layout == "current" else VQFHeaderLegacy
    n = min(_u(b, field_offset(schema, "n_tensors"), 4), (len(b) - DIRECTORY_OFFSET) // 64)
    entries = [DIRECTORY_OFFSET + ENTRY_BYTES * i for i in range(max(n, 0))]
    header = HEADER_FIELDS[layout]
    where = draw(0, 2) if entries else 0
    if where == 0:  # a header or arch word
        name, off, width = header[draw(0, len(header) - 1)]
        if name in FLOAT_FIELDS:
            v = INTERESTING_F32[draw(0, len(INTERESTING_F32) - 1)]
            b[off : off + 4] = struct.pack("<f", v)
        elif name == "flags" and draw(0, 1):
            b[off : off + 4] = (_u(b, off, 4) ^ (1 << draw(0, 11))).to_bytes(4, "little")
        else:
            others = [_u(b, o, w) for _, o, w in header if w >= width]
            others += [_u(b, e + o, w) for e in entries[:8] for _, o, w in ENTRY_FIELDS]
            b[off : off + width] = _int_value(draw, _u(b, off, width), others, width).to_bytes(
                width, "little"
            )
    else:
        e = entries[draw(0, len(entries) - 1)]
        other = entries[draw(0, len(entries) - 1)]
        op = draw(0, 9)
        if op == 0:  # the name: another entry's (a duplicate), empty, unterminated, non-ASCII
            kind = draw(0, 3)
            name = (
                bytes(b[other : other + 32])
                if kind == 0
                else bytes(32)
                if kind == 1
                else b"x" * 32
                if kind == 2
                else b"\xff" + bytes(b[e + 1 : e + 32])
            )
            b[e : e + 32] = name
        elif op == 1:  # two whole entries swapped, or one copied over another
            rec = bytes(b[other : other + ENTRY_BYTES])
            if draw(0, 1):
                b[other : other + ENTRY_BYTES] = b[e : e + ENTRY_BYTES]
            b[e : e + ENTRY_BYTES] = rec
        else:
            name, off, width = ENTRY_FIELDS[draw(0, len(ENTRY_FIELDS) - 1)]
            if name == "qtype" and draw(0, 1):
                codes = [int(q) for q in QType] + [0, 6, 0xFF]
                v = codes[draw(0, len(codes) - 1)]
            else:
                others = [_u(b, x + o, w) for x in (e, other) for _, o, w in ENTRY_FIELDS]
                others += [_u(b, o, w) for nm, o, w in header if nm in ("data_offset", "file_len")]
                if name == "offset":  # the end of another tensor: adjacent or overlapping
                    others.append(_u(b, other + off, 8) + _u(b, other + _ENTRY_BYTES_AT, 8))
                v = _int_value(draw, _u(b, e + off, width), others, width)
            b[e + off : e + off + width] = v.to_bytes(width, "little")
    if draw(0, 7):
        vqf_reseal(b, layout)
    return bytes(b)


# --------------------------------------------------------------------------------------------
# structure-aware edits of a .ninfer directory: objects, bindings and files fields


def mutate_ninfer_fields(doc: Any, draw: Draw) -> Any:
    """One object, binding or file field set to a boundary number of the document itself (a
    payload end, an object's end, a shape product ±1) or cross-referenced to another object.
    A document an earlier edit left without that structure gets a plain JSON edit instead."""
    try:
        return _ninfer_fields(json.loads(json.dumps(doc)), draw)
    except (TypeError, KeyError, IndexError, AttributeError, ValueError):
        return mutate_json(doc, draw)


def _ninfer_fields(doc: Any, draw: Draw) -> Any:
    objects = (
        [o for o in doc.get("objects", []) if isinstance(o, dict)] if isinstance(doc, dict) else []
    )
    if not objects:
        return mutate_json(doc, draw)
    ids = [o.get("id") for o in objects]
    ends = [o.get("offset", 0) + o.get("bytes", 0) for o in objects
            if isinstance(o.get("offset"), int) and isinstance(o.get("bytes"), int)]  # fmt: skip
    sizes = [f.get("payload_bytes") for f in doc.get("files", []) if isinstance(f, dict)]
    numbers = [v for v in ends + sizes if isinstance(v, int)] + [0, 1, 2**53, 2**64]

    def near() -> int:
        return numbers[draw(0, len(numbers) - 1)] + draw(-1, 1)

    where = draw(0, 3)
    bindings = doc.get("bindings") if isinstance(doc.get("bindings"), dict) else {}
    if where == 0 or not bindings:  # an object field
        o = objects[draw(0, len(objects) - 1)]
        key = ("offset", "bytes", "shape", "format", "layout", "id", "kind", "file")[draw(0, 7)]
        if key in ("offset", "bytes", "file"):
            o[key] = near() if key != "file" else draw(-1, 3)
        elif key == "shape" and isinstance(o.get("shape"), list):
            shape = o["shape"]
            op = draw(0, 3)
            if op == 0 and shape:
                shape[draw(0, len(shape) - 1)] += draw(-1, 1)
            elif op == 1:
                shape.append(draw(0, 2))
            elif op == 2 and shape:
                shape[draw(0, len(shape) - 1)] = INTERESTING_INTS[
                    draw(0, len(INTERESTING_INTS) - 1)
                ]
            else:
                o["shape"] = shape[::-1] if len(shape) > 1 else []
        elif key == "id":
            o["id"] = ids[draw(0, len(ids) - 1)]  # a duplicate id
        else:
            donors = [x[key] for x in objects if key in x] or [None]
            o[key] = donors[draw(0, len(donors) - 1)]  # another object's format/layout/kind
    elif where <= 2:  # a binding: its object, its parts, its ranges
        names = sorted(bindings)
        b = bindings[names[draw(0, len(names) - 1)]]
        if not isinstance(b, dict):
            bindings[names[0]] = {"object": ids[draw(0, len(ids) - 1)]}
        elif "parts" in b and isinstance(b["parts"], list) and b["parts"]:
            parts = b["parts"]
            p = parts[draw(0, len(parts) - 1)]
            op = draw(0, 4)
            if op == 0 and isinstance(p, dict):
                p["object"] = ids[draw(0, len(ids) - 1)]
            elif op == 1 and isinstance(p, dict) and isinstance(p.get("range"), list):
                r = p["range"]
                if r:
                    r[draw(0, len(r) - 1)] += draw(-1, 1) or 1
            elif op == 2 and isinstance(p, dict):
                p["range"] = [near() % 8, near() % 8] if draw(0, 1) else [0, near()]
            elif op == 3:
                parts.append(json.loads(json.dumps(p)))
            else:
                del parts[draw(0, len(parts) - 1)]
        else:
            op = draw(0, 2)
            if op == 0:
                b["object"] = ids[draw(0, len(ids) - 1)]
            elif op == 1:  # a whole binding turned into parts of one or two objects
                k = draw(0, 4)
                b.pop("object", None)
                first, second = ids[draw(0, len(ids) - 1)], ids[draw(0, len(ids) - 1)]
                b["parts"] = [
                    {"object": first, "range": [0, k]},
                    {"object": second, "range": [k, near() % 9]},
                ]
            else:
                b["range"] = [0, near()]
    else:  # a file record: its size or path
        files = [f for f in doc.get("files", []) if isinstance(f, dict)]
        if files:
            f = files[draw(0, len(files) - 1)]
            if draw(0, 2):
                f["payload_bytes"] = near()
            else:
                f["path"] = [None, "", ".", "..", "x/../y", files[0].get("path"), "a" * 300][
                    draw(0, 6)
                ]
    return doc


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
        if seed.format == "ninfer3" and name == seed.entry and kind < 7:
            parts = split_entry(data)
            if parts is not None:
                edit = mutate_json if kind < 3 else mutate_ninfer_fields
                files[name] = reframe(data, edit(parts[0], draw))
                continue
        if seed.format == "vqf" and kind < 7:
            files[name] = mutate_vqf_fields(data, draw)
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
