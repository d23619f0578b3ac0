"""Expected values checked against implementations that are not ours (conformance/README.md,
"Where the expected values come from").

The generator computes every `want.json` with the reference engine; a mistake the reference and
the fast engine share would be published to every engine team. So before a corpus is written,
`check_all` recomputes what an outside library can compute and the generator refuses a corpus
where they disagree:

* VQF `q8_0` / `q4_0` decoding: `gguf.quants.dequantize` (gguf-py, llama.cpp's own Python) on the
  payload bytes; encoding: `gguf.quants.quantize` (ggml's reference quantiser) block by block,
  with the differences spec/vqf.md §vs-ggml documents allowed and nothing else;
* VQF `f16`: NumPy's binary16 conversions; `f32`, `.ninfer` `fp32`, `int32`, resources: the bytes
  themselves;
* `.ninfer` `bf16`: ml_dtypes' bfloat16 conversions; `fp8_e4m3fn_row_bf16` and `nvfp4`: the
  values recomputed from the case's words with ml_dtypes' float8_e4m3fn, float4_e2m1fn and
  bfloat16 (spec/ninfer3.md §fp8-row, §nvfp4);
* the grouped integer formats of both containers (`.ninfer` q4/q5/q6/q8/t2, VQF tiled, g256,
  q4i8): the values recomputed from the words with NumPy's binary16 widening; their word
  layouts and encoders have no outside implementation ("ours only" in the README table).

Model cases built on the board engine's own outputs (tests/data/kestrel-board-v2, computed by the
engine's code under qemu): a `vqf-board-moe-model` case naming a pack runs the pack's model file
on the pack's FFN inputs, and every FFN array of its answer must be the engine's, bit for bit
(`check_board_moe`).

Each check returns human-readable problems (empty: agreement). `ORACLES` is the README table of
the codec cases.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

Files = Mapping[str, bytes]
#: The board engine's outputs in the source tree (a case's `pack` is a folder below it).
BOARD_DATA = Path(__file__).resolve().parents[1] / "tests" / "data"

#: case topic (or kind) → what its expected values are checked against; conformance/README.md
#: prints this table and a test keeps the two equal.
ORACLES: dict[str, str] = {
    "vqf codec q8_0, q4_0": "gguf.quants dequantize (values); gguf.quants quantize (payload, "
    "except the spec/vqf.md §vs-ggml differences)",
    "vqf codec f16": "NumPy float16 conversions (payload and values)",
    "vqf codec f32": "the bytes themselves",
    "vqf codec q8_0_4x4, q8_0_8x8, q4_0_4x4, q4_0_8x8l, g256*, q4i8": "values from the words "
    "by NumPy float16 widening; layout and encoder: ours only",
    "ninfer3 codec bf16": "ml_dtypes bfloat16 conversions (payload and values)",
    "ninfer3 codec fp32, int32, resource": "the bytes themselves",
    "ninfer3 codec fp8_e4m3fn_row_bf16": "values from the words by ml_dtypes float8_e4m3fn and "
    "bfloat16; layout and encoder: ours only",
    "ninfer3 codec nvfp4": "values from the words by ml_dtypes float4_e2m1fn and float8_e4m3fn",
    "ninfer3 codec q4/q5/q6/q8/t2 row_split_k128_v1": "values from the words by NumPy float16 "
    "widening; layout and encoder: ours only",
}


def _array(doc: Mapping[str, Any]) -> np.ndarray:
    """An answer's {"dtype", "shape", "hex"} array (conformance/codec_cases.py `array_json`)."""
    dtype = np.dtype(doc["dtype"]).newbyteorder("<")
    shape = tuple(int(n) for n in doc["shape"])
    return np.frombuffer(bytes.fromhex(doc["hex"]), dtype=dtype).reshape(shape)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit equality of two float arrays of one shape, any NaN equal to any NaN of the same sign."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a) & np.isnan(b) & (np.signbit(a) == np.signbit(b))
    return bool(np.all(nan | (a.view(np.uint32) == b.view(np.uint32))))


def _first_bad(a: np.ndarray, b: np.ndarray) -> str:
    a, b = np.asarray(a, np.float32).ravel(), np.asarray(b, np.float32).ravel()
    bad = np.flatnonzero(~((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))
    i = int(bad[0]) if len(bad) else 0
    return f"element {i}: ours {a[i]!r} ({a.view(np.uint32)[i]:#010x}), theirs {b[i]!r}"


# -- per codec ---------------------------------------------------------------------------------


def _ggml_blocks(values: np.ndarray) -> np.ndarray:
    """The values as ggml rows: each row zero-padded to a multiple of 32 columns."""
    rows, cols = values.shape
    padded = np.zeros((rows, -(-cols // 32) * 32), np.float32)
    padded[:, :cols] = values
    return padded


def vqf_ggml(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """q8_0 / q4_0: decoded by gguf-py; encoded as ggml does, but for spec/vqf.md §vs-ggml."""
    from gguf.quants import GGMLQuantizationType, dequantize, quantize

    name = case["codec"]["name"]
    qtype = GGMLQuantizationType.Q8_0 if name == "q8_0" else GGMLQuantizationType.Q4_0
    rows, cols = (int(n) for n in case["shape"])
    payload = np.frombuffer(parts["payload.bin"], np.uint8)
    theirs = dequantize(payload.reshape(rows, -1), qtype).astype(np.float32)[:, :cols]
    problems = []
    ours = _array(want["values"])
    if not _same_bits(ours, theirs):
        problems.append("gguf.quants.dequantize differs: " + _first_bad(ours, theirs))
    if "values.bin" in parts and case.get("encoder") == "kestrel":
        x = _ggml_blocks(np.frombuffer(parts["values.bin"], "<f4").reshape(rows, cols))
        ggml = quantize(x, qtype).reshape(-1, 34 if name == "q8_0" else 18)
        ours = payload.reshape(-1, ggml.shape[1])
        for b in np.flatnonzero(np.any(ggml != ours, axis=1)):
            block = x.reshape(-1, 32)[b]
            if not documented_difference(name, block, ours[b], ggml[b]):
                problems.append(f"block {b} differs from gguf.quants.quantize beyond §vs-ggml")
    return problems


def documented_difference(name: str, x: np.ndarray, ours: np.ndarray, ggml: np.ndarray) -> bool:
    """Whether one block's Kestrel and ggml bytes differ only as spec/vqf.md §vs-ggml says:
    Q8_0 — the same scale word, and codes differ only in a block with amax below 1.27e-8 or
    at elements whose scaled value is ±(0.5 − 2⁻²⁵) to within rounding; Q4_0 — only the scale
    word of an all-zero block (ggml ±0, Kestrel 0x3C00)."""
    amax = float(np.max(np.abs(x)))
    if name == "q4_0":
        return amax == 0 and bytes(ours[2:]) == bytes(ggml[2:]) and bytes(ours[:2]) == b"\x00\x3c"
    if bytes(ours[:2]) != bytes(ggml[:2]):
        return False
    if amax < 1.27e-8:
        return True
    scaled = np.abs(x.astype(np.float64) * 127.0 / amax)
    differ = ours[2:].view(np.int8) != ggml[2:].view(np.int8)
    return bool(np.all(np.abs(scaled[differ] - 0.5) < 2.0**-22))


def vqf_f16(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """f16: payload = NumPy's RNE narrowing of the values (NaNs: a NaN of the same sign);
    values = NumPy's exact widening of the payload."""
    payload = np.frombuffer(parts["payload.bin"], "<f2")
    problems = []
    if not _same_bits(_array(want["values"]).ravel(), payload.astype(np.float32)):
        problems.append("values differ from NumPy's float16 widening of the payload")
    if "values.bin" in parts:
        x = np.frombuffer(parts["values.bin"], "<f4")
        with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN inputs are the point
            theirs = x.astype(np.float16).astype(np.float32)
        if not _same_bits(payload.astype(np.float32), theirs):
            problems.append("payload differs from NumPy's float16 rounding of the values")
    return problems


def exact_bytes(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """f32, fp32, int32, resources: the payload is the values' bytes and decodes to them."""
    values = _array(want["values"])
    problems = []
    if values.tobytes() != parts["payload.bin"]:
        problems.append("decoded values are not the payload's bytes")
    if "values.bin" in parts and parts["values.bin"] != parts["payload.bin"]:
        problems.append("encoded payload is not the input's bytes")
    return problems


def ninfer_bf16(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """bf16: payload = ml_dtypes' RNE narrowing; values = its exact widening."""
    payload = np.frombuffer(parts["payload.bin"], "<u2").view(ml_dtypes.bfloat16)
    problems = []
    if not _same_bits(_array(want["values"]).ravel(), payload.astype(np.float32)):
        problems.append("values differ from ml_dtypes' bfloat16 widening of the payload")
    if "values.bin" in parts:
        x = np.frombuffer(parts["values.bin"], case.get("values_dtype", "float32"))
        with np.errstate(over="ignore", invalid="ignore"):
            theirs = x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
        if not _same_bits(payload.astype(np.float32), theirs):
            problems.append("payload differs from ml_dtypes' bfloat16 rounding of the values")
    return problems


def fp8_row(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """w = f32(e4m3fn(c) × bf16(s[n])) (spec/ninfer3.md §fp8-row), by ml_dtypes."""
    w = want["words"]
    codes = _array(w["codes"]).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    scales = _array(w["scales"]).view(ml_dtypes.bfloat16).astype(np.float32)
    theirs = codes * scales[:, None]
    ours = _array(want["values"])
    return [] if _same_bits(ours, theirs) else ["fp8 values: " + _first_bad(ours, theirs)]


def nvfp4(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """W = e2m1(c) × e4m3fn(s[n, k // 16]) / d_w (spec/ninfer3.md §nvfp4), by ml_dtypes; the
    product of two small-mantissa values is exact in binary32, so only the division rounds."""
    w = want["words"]
    codes = _array(w["codes"]).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    scales = _array(w["scales"]).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    divisor = _array(w["divisor"]).reshape(1).view(np.float32)[0]
    block = np.repeat(scales, 16, axis=1)[:, : codes.shape[1]]
    theirs = (codes * block) / divisor
    ours = _array(want["values"])
    return [] if _same_bits(ours, theirs) else ["nvfp4 values: " + _first_bad(ours, theirs)]


def grouped(case: Mapping[str, Any], want: Mapping[str, Any], parts: Files) -> list[str]:
    """Integer codes times a binary16 scale per group of columns: value = f32(c) ⊗ f32(d) with
    NumPy's widening (exact: at most 8 + 11 significant bits). The group is the row's columns
    split evenly over the scale words (a 4-bit VQF code is stored offset by 8)."""
    w = want["words"]
    codes = _array(w["codes"]).astype(np.int32)
    if w["codes"]["dtype"] == "uint8":
        codes = codes - 8
    scales = _array(w["scales"]).view(np.float16).astype(np.float32)
    rows, cols = codes.shape
    scales = scales.reshape(rows, -1) if scales.size % rows == 0 else scales.reshape(1, -1)
    group = _group_size(case)
    per_col = np.repeat(scales, group, axis=1)[:, :cols]
    theirs = codes.astype(np.float32) * per_col
    ours = _array(want["values"])
    return [] if _same_bits(ours, theirs) else ["grouped values: " + _first_bad(ours, theirs)]


def _group_size(case: Mapping[str, Any]) -> int:
    """Columns per scale word: 32 for the q8 formats and VQF blocks, 256 for g256, 128 for t2, 64
    for the other `.ninfer` grouped formats."""
    codec = case["codec"]
    if case["format"] == "ninfer3":
        return {"q8_g32_fp16": 32, "t2_g128_fp16": 128}.get(codec["format"], 64)
    return 256 if codec["name"].startswith("g256") else 32


def check_for(case: Mapping[str, Any]) -> Callable[..., list[str]] | None:
    """The cross-check of one codec case, by its codec."""
    codec = case["codec"]
    if case["format"] == "vqf":
        name = codec["name"]
        return {"q8_0": vqf_ggml, "q4_0": vqf_ggml, "f16": vqf_f16, "f32": exact_bytes}.get(
            name, grouped
        )
    fmt = codec["format"] or "resource"
    table: dict[str, Callable[..., list[str]]] = {
        "bf16": ninfer_bf16, "fp32": exact_bytes, "int32": exact_bytes, "resource": exact_bytes,
        "fp8_e4m3fn_row_bf16": fp8_row, "nvfp4": nvfp4,
    }  # fmt: skip
    return table.get(fmt, grouped)


def check_codecs(files: Files) -> list[str]:
    """Every codec case of a corpus (path → bytes), cross-checked; problems named by case id."""
    problems = []
    for path in sorted(p for p in files if p.endswith("/case.json")):
        case = json.loads(files[path])
        if case["kind"] != "codec" or case["expect"] != "accept":
            continue
        folder = path.removesuffix("case.json")
        parts = {p.removeprefix(folder): b for p, b in files.items() if p.startswith(folder)}
        want = json.loads(parts["want.json"])
        check = check_for(case)
        problems += [f"{case['id']}: {p}" for p in (check(case, want, parts) if check else [])]
    return problems


def case_parts(files: Files, kind: str) -> list[tuple[dict[str, Any], Files]]:
    """(case.json, the case's files by name) of every case of `kind` (case.json's `kind`)."""
    found = []
    for path in sorted(p for p in files if p.endswith("/case.json")):
        case = json.loads(files[path])
        if case["kind"] == kind:
            folder = path.removesuffix("case.json")
            found.append((case, {p.removeprefix(folder): b for p, b in files.items()
                                 if p.startswith(folder)}))  # fmt: skip
    return found


def pack_arrays(pack: Path) -> dict[str, np.ndarray]:
    with np.load(pack / "engine.npz") as npz:
        return {name: npz[name] for name in npz.files}


def board_moe_ffn(case: Mapping[str, Any], parts: Files) -> list[str]:
    """One case on a board MoE pack: its model and inputs are the pack's, and each FFN array of
    the answer is the engine's (hex: the same bits; a digest: the SHA-256 of the engine's
    little-endian array)."""
    pack = BOARD_DATA / case["pack"]
    if not (pack / "engine.npz").is_file():
        return [f"the board pack {case['pack']} is missing (tests/data)"]
    engine = pack_arrays(pack)
    problems = []
    if parts[case["model"]] != (pack / "model.vqf").read_bytes():
        problems.append(f"{case['model']} is not the pack's model.vqf")
    if parts[case["ffn_inputs"]["file"]] != engine["moe.x_in"].astype("<f4").tobytes():
        problems.append("the FFN inputs are not the pack's moe.x_in")
    for name, ours in json.loads(parts["want.json"])["ffn"].items():
        theirs = engine[name]
        if isinstance(ours, str):
            wide = theirs.astype("<i4" if theirs.dtype == np.int32 else "<f4")
            same = hashlib.sha256(np.ascontiguousarray(wide)).hexdigest() == ours
        elif theirs.dtype == np.int32:
            same = np.array_equal(_array(ours), theirs)
        else:
            same = _same_bits(_array(ours), theirs)
        if not same:
            problems.append(f"ffn {name} differs from the engine's")
    return problems


def check_board_moe(files: Files) -> list[str]:
    """Every `vqf-board-moe-model` case naming a board pack, against the engine's arrays."""
    return [
        f"{case['id']}: {p}"
        for case, parts in case_parts(files, "board-moe-model")
        if "pack" in case
        for p in board_moe_ffn(case, parts)
    ]


def check_all(files: Files) -> list[str]:
    """Every cross-check the generator runs before it writes (torch-free)."""
    return check_codecs(files) + check_board_moe(files)
