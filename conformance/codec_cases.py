"""Codec cases for every VQF layout and every `.ninfer` v3 (format, layout) pair (README, "Codec
cases"): input values -> the canonical encoder's bytes, and bytes -> logical words and values.

`answer` is what an implementation prints for a codec case; the generator computes want.json
with the reference engine and the built-in adapters answer with `ref` or `fast` codecs, so the
same function is the protocol for both. Words and values are printed as the hex of their
little-endian array bytes (dtype and shape given), so comparison is bit for bit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.ref.backend import REFERENCE, Backend
from weightfile.spec.codecs.ninfer3.formats import FORMATS, GroupedFormat
from weightfile.spec.codecs.ninfer3.registry import CODECS as NINFER3_CODECS
from weightfile.spec.codecs.vqf.registry import CODECS as VQF_CODECS

from .case_types import Case
from .codec_vectors import partial, special_blocks, special_floats
from .spec_numbers import f32s, spec_66_input

FLOAT_VQF = ("f32", "f16")
FLOAT_NINFER3 = ("bf16", "fp32")


@dataclass(frozen=True, slots=True)
class CodecCase:
    """One codec case: which codec, the shape, and its input (values, or words to import)."""

    format: str  # "vqf" or "ninfer3"
    topic: str  # the codec's folder: VQF registry name, or `<format>.<layout>`
    name: str  # what the vector exercises
    codec: dict[str, str]  # {"name"} (VQF) or {"format", "layout"} (.ninfer)
    shape: tuple[int, ...]
    values: np.ndarray | None  # encoder input; None for word-only cases
    words: dict[str, np.ndarray] | None = None  # imported words (no encoder defined)
    payload: bytes | None = None  # hand-packed VQF blocks (decode-only cases)


def array_json(a: np.ndarray) -> dict[str, Any]:
    """{"dtype", "shape", "hex"}: the array's little-endian bytes in C order."""
    a = np.asarray(a)
    le = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return {"dtype": a.dtype.name, "shape": [str(n) for n in a.shape], "hex": le.tobytes().hex()}


def engine_codec(backend: Backend, case: dict[str, Any]) -> Any:
    """The backend's codec for a case.json `codec` member (module for VQF, Codec for .ninfer)."""
    if case["format"] == "vqf":
        return backend.vqf_codecs.codec(case["codec"]["name"])
    return backend.ninfer_codecs.get_codec(case["codec"]["format"] or None, case["codec"]["layout"])


def answer(
    backend: Backend, case: dict[str, Any], values: bytes | None, payload: bytes | None
) -> Any:
    """What a codec case's implementation prints: encoded digest, words and values. A case
    without a payload only encodes (an encoding that must fail raises before anything is
    printed: conformance/encode_failures.py)."""
    codec = engine_codec(backend, case)
    shape = tuple(int(n) for n in case["shape"])
    out: dict[str, Any] = {}
    if case["format"] == "vqf":
        rows, cols = shape
        if values is not None:
            x = np.frombuffer(values, dtype="<f4").reshape(shape)
            out["encoded_sha256"] = hashlib.sha256(codec.encode(x, rows, cols)).hexdigest()
        if payload is None:
            return out
        words = codec.decode_words(payload, rows, cols)
        decoded = codec.decode(payload, rows, cols)
    else:
        if values is not None:
            x = np.frombuffer(values, dtype=case["values_dtype"]).reshape(shape)
            out["encoded_sha256"] = hashlib.sha256(codec.encode(x, shape)).hexdigest()
        if payload is None:
            return out
        words = codec.decode_words(payload, shape)
        decoded = codec.decode(payload, shape)
    out["words"] = {name: array_json(words[name]) for name in sorted(words)}
    out["values"] = array_json(decoded)
    return out


def encode_payload(c: CodecCase) -> bytes:
    """The case's payload under the reference: the canonical encoder, or the imported words."""
    codec = engine_codec(REFERENCE, {"format": c.format, "codec": c.codec})
    if c.payload is not None:
        return c.payload
    if c.format == "vqf":
        assert c.values is not None
        return codec.encode(c.values.reshape(c.shape), *c.shape)
    if c.values is None:
        assert c.words is not None
        return codec.encode_words(c.words, c.shape)
    return codec.encode(c.values.reshape(c.shape), c.shape)


# -- the cases ---------------------------------------------------------------------------------


def vqf_cases() -> Iterator[CodecCase]:
    """Every VQF layout: the special vector as [8, 32], then partial blocks / groups."""
    for name, codec in VQF_CODECS.items():
        spec = {"name": name}
        if name in FLOAT_VQF:
            yield CodecCase("vqf", name, "special", spec, (1, 64), special_floats())
        else:
            yield CodecCase("vqf", name, "special", spec, (8, 32), special_blocks())
        if name in ("q8_0", "q4_0"):
            yield CodecCase("vqf", name, "spec-6-6", spec, (1, 32), spec_66_input())
            blocks = hand_packed_blocks(name, 8)
            yield CodecCase("vqf", name, "words-extremes", spec, (4, 64), None, payload=blocks)
        if codec.row_group == 1:
            yield CodecCase("vqf", name, "partial-block", spec, (1, 40), partial(3, 40))
            yield CodecCase("vqf", name, "partial-group", spec, (3, 96), partial(4, 288))
        else:
            yield CodecCase("vqf", name, "two-groups", spec, (16, 64), partial(6, 1024))


#: f16 scale words from the smallest subnormal to the largest finite, both signs, and zero.
SCALE_WORDS = (0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x8001, 0xFBFF, 0x0000)


def hand_packed_blocks(name: str, count: int) -> bytes:
    """`count` blocks packed by hand from spec/vqf.md §q8-0 (Q8_0: f16 d, 32 int8) or
    spec/vqf.md §q4-0 (Q4_0: f16 d, 16 bytes, element j in the low nibble of byte j and j+16 in the
    high nibble), with every code of the domain and the scales of SCALE_WORDS."""
    out = bytearray()
    for b in range(count):
        out += SCALE_WORDS[b % len(SCALE_WORDS)].to_bytes(2, "little")
        if name == "q8_0":
            out += bytes((b * 32 + j) % 256 for j in range(32))  # int8 -128..127 as bytes
        else:
            nib = [(b + j) % 16 for j in range(32)]
            out += bytes(nib[j] | nib[j + 16] << 4 for j in range(16))
    return bytes(out)


def grouped_extremes(fmt: GroupedFormat, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Codes cycling through qmin..qmax (legal ones), scales from 0x0001 up to 0x7BFF (max)."""
    n, k = shape
    legal = [q for q in range(fmt.qmin, fmt.qmax + 1) if q not in fmt.illegal_codes]
    codes = np.array([legal[i % len(legal)] for i in range(n * k)], dtype=np.int8).reshape(shape)
    groups = -(-k // fmt.group_size)
    scale_words = [0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x1234]
    scales = np.array([scale_words[i % 6] for i in range(n * groups)], dtype=np.uint16)
    return {"codes": codes, "scales": scales.reshape(n, groups)}


def nvfp4_words(shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Every E2M1 code, E4M3FN scales from 0x01 to 0x7E, divisor 0.5 (spec/ninfer3.md §nvfp4)."""
    n, k = shape
    codes = (np.arange(n * k) % 16).astype(np.uint8).reshape(shape)
    scale_words = [0x01, 0x08, 0x38, 0x40, 0x7E, 0x00, 0x30]
    scales = np.array([scale_words[i % 7] for i in range(n * k // 16)], dtype=np.uint8)
    return {
        "codes": codes,
        "scales": scales.reshape(n, k // 16),
        "divisor": np.array(0x3F000000, dtype=np.uint32),
    }


def ninfer3_cases() -> Iterator[CodecCase]:
    """Every (format, layout) pair, encoder cases where an encoder exists, words otherwise."""
    for (fmt, layout), pair in NINFER3_CODECS.items():
        spec = {"format": fmt or "", "layout": layout}
        topic = f"{fmt or 'resource'}.{layout}"
        if fmt is None:
            data = np.arange(256, dtype=np.uint8)
            yield CodecCase("ninfer3", topic, "every-byte", spec, (256,), data)
            continue
        info = FORMATS[fmt]
        if fmt in FLOAT_NINFER3:
            yield CodecCase("ninfer3", topic, "special", spec, (64,), special_floats())
            yield CodecCase("ninfer3", topic, "rank-3", spec, (2, 3, 4), partial(9, 24))
        elif fmt == "int32":
            edges = [-(2**31), 2**31 - 1, 0, -1, 1, 2**24 + 1, -(2**24) - 1]
            data = np.array(edges + list(range(-4, 5)), dtype=np.int32)
            yield CodecCase("ninfer3", topic, "extremes", spec, (16,), data)
        elif fmt == "nvfp4":
            yield CodecCase(
                "ninfer3", topic, "words", spec, (128, 64), None, nvfp4_words((128, 64))
            )
        elif pair.encoder is None:
            assert isinstance(info, GroupedFormat)
            words = grouped_extremes(info, (2, 200))
            yield CodecCase("ninfer3", topic, "words-extremes", spec, (2, 200), None, words)
        else:
            yield CodecCase("ninfer3", topic, "special", spec, (2, 128), special_blocks())
            if fmt == "fp8_e4m3fn_row_bf16":
                rows = [1.0, -2.0, 0.30078125, -1e-6, 448.0, 1.0, 0.0, 0.0]
                yield CodecCase("ninfer3", topic, "spec-3-7", spec, (2, 4), f32s(*rows))
            yield CodecCase("ninfer3", topic, "partial-group", spec, (3, 130), partial(7, 390))
            if isinstance(info, GroupedFormat):
                words = grouped_extremes(info, (2, 130))
                yield CodecCase("ninfer3", topic, "words-extremes", spec, (2, 130), None, words)


def all_cases() -> Iterator[CodecCase]:
    yield from vqf_cases()
    yield from ninfer3_cases()


def encoder_name(c: CodecCase) -> str:
    """The canonical encoder the expected bytes come from ("" when words are imported)."""
    if c.values is None:
        return ""
    if c.format == "vqf":
        return VQF_CODECS[c.codec["name"]].default_mode
    pair = NINFER3_CODECS[(c.codec["format"] or None, c.codec["layout"])]
    return pair.encoder or ""


def corpus_cases(fmt: str, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of the codec cases of one container."""
    for c in all_cases():
        if c.format != fmt:
            continue
        payload = encode_payload(c)
        fields: dict[str, Any] = {"expect": "accept", "codec": c.codec,
                                  "shape": [str(n) for n in c.shape]}  # fmt: skip
        files = {"payload.bin": payload}
        if c.values is not None:
            values = np.ascontiguousarray(c.values, dtype=c.values.dtype.newbyteorder("<"))
            files["values.bin"] = values.tobytes()
            fields |= {"values": "values.bin", "values_dtype": c.values.dtype.name}
        fields |= {"payload": "payload.bin", "encoder": encoder_name(c),
                   "description": DESCRIPTIONS[c.name]}  # fmt: skip
        want = answer(REFERENCE, {"format": fmt, **fields}, files.get("values.bin"), payload)
        yield f"{prefix}/codec/{c.topic}/{c.name}", fields, files, want


DESCRIPTIONS = {
    "special": "edge values: signed zeros, subnormals, ties, extremes (and inf/NaN for floats)",
    "partial-block": "a 40-element matrix: one whole and one partial 32-lane block",
    "partial-group": "blocks of varied magnitude; the last group is partial",
    "two-groups": "two row groups of a tiled layout, blocks of varied magnitude",
    "rank-3": "a rank-3 tensor of seeded values",
    "extremes": "int32 extremes and small values",
    "spec-6-6": "spec/vqf.md §6.6: x_i = f32((i - 12) * 0.1), i = 0..31",
    "spec-3-7": "spec/ninfer3.md §3.7: rows [1, -2, 0.30078125, -1e-6] and [448, 1, 0, 0]",
    "every-byte": "the bytes 0x00..0xFF",
    "words": "imported words: every code, scales across the domain, divisor 0.5",
    "words-extremes": "words only: every code, scales from the smallest subnormal to the max",
}
