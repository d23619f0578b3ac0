"""Codec cases whose encoding must fail (conformance/README.md, "Encoding that must fail").

A canonical encoder refuses some inputs: a NaN or infinity reaching a quantiser (spec/vqf.md
§quantisation; spec/ninfer3.md §grouped-absmax, step 1; spec/ninfer3.md §fp8-row-maxabs, step 1),
a binary16 scale that rounds to infinity (spec/ninfer3.md §grouped-absmax, step 6), an FP8 row so
small that 1/scale overflows (spec/ninfer3.md §fp8-row-maxabs, step 5), and a pair that has no
value encoder at all (nvfp4, t2: `no_encoder`). Each case gives `values.bin` and no payload; the
implementation must exit 1 with the rule, as for an invalid file. The rule of each case is what
the reference raises, and the generator checks it is the rule the case was written for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.ref.backend import REFERENCE
from weightfile.spec.codecs.ninfer3.registry import CODECS as NINFER3_CODECS
from weightfile.spec.codecs.vqf.registry import CODECS as VQF_CODECS
from weightfile.spec.errors import WeightfileError

from .case_types import Case


@dataclass(frozen=True, slots=True)
class Failure:
    """One input an encoder must refuse, and the rule ids an implementation may answer with."""

    topic: str  # the codec folder (as the codec cases name it)
    name: str
    codec: dict[str, str]
    shape: tuple[int, ...]
    values: np.ndarray
    rules: tuple[str, ...]  # the reference's rule first; the others are accepted too
    description: str
    encoder: str = ""  # the canonical encoder that must refuse ("" for a pair without one)


def with_value(shape: tuple[int, ...], at: int, value: float) -> np.ndarray:
    """Ones of `shape` (float32) with one element replaced."""
    x = np.ones(int(np.prod(shape)), np.float32)
    x[at] = value
    return x.reshape(shape)


def vqf_failures() -> Iterator[Failure]:
    """The VQF quantisers (Kestrel mode) refuse non-finite input: `vqf.codec.<codec>.finite_input`;
    a tiled layout quantises with its plain codec, so either codec's name is accepted."""
    plain = (("q8_0", np.nan), ("q4_0", np.inf), ("q4i8", -np.inf), ("g256", np.nan))
    for name, bad in plain:
        yield Failure(
            name,
            "non-finite",
            {"name": name},
            (2, 32),
            with_value((2, 32), 37, bad),
            (f"vqf.codec.{name}.finite_input",),
            f"a {bad} in row 1 of a {name} input: the quantiser must refuse it",
        )
    for tiled, base in (("q8_0_4x4", "q8_0"), ("g256_8x8", "g256")):
        yield Failure(
            tiled,
            "non-finite",
            {"name": tiled},
            (8, 32),
            with_value((8, 32), 5, np.nan),
            (f"vqf.codec.{base}.finite_input", f"vqf.codec.{tiled}.finite_input"),
            f"a NaN in a {tiled} input: quantised by {base}, which must refuse it",
        )


def ninfer3_failures() -> Iterator[Failure]:
    """The `.ninfer` encoders' refusals (spec/ninfer3.md §grouped-absmax, §fp8-row-maxabs) and the
    pairs without an encoder."""
    row_split, fp8 = "row_split_k128_v1", "row_scale_v1"
    q4 = {"format": "q4_g64_fp16", "layout": row_split}
    f8 = {"format": "fp8_e4m3fn_row_bf16", "layout": fp8}
    zeros = np.zeros((2, 130), np.float32)
    huge, tiny = zeros.copy(), zeros.copy()
    huge[0, 0], tiny[0, 0] = 1e6, 1e-38
    yield Failure(
        f"q4_g64_fp16.{row_split}",
        "non-finite",
        q4,
        (2, 130),
        with_value((2, 130), 3, np.nan),
        ("ninfer3.codec.grouped_absmax.nonfinite",),
        "a NaN in group [0][0]: grouped_absmax step 1 fails",
    )
    yield Failure(
        f"q4_g64_fp16.{row_split}",
        "scale-overflow",
        q4,
        (2, 130),
        huge,
        ("ninfer3.codec.grouped_absmax.scale_overflow",),
        "amax 1e6: amax/7 rounds to binary16 infinity (grouped_absmax step 6)",
    )
    yield Failure(
        f"fp8_e4m3fn_row_bf16.{fp8}",
        "non-finite",
        f8,
        (2, 130),
        with_value((2, 130), 0, np.inf),
        ("ninfer3.codec.fp8_row_maxabs.nonfinite",),
        "an infinity in row 0: fp8_row_maxabs step 1 fails",
    )
    yield Failure(
        f"fp8_e4m3fn_row_bf16.{fp8}",
        "inverse-overflow",
        f8,
        (2, 130),
        tiny,
        ("ninfer3.codec.fp8_row_maxabs.inverse_overflow",),
        "a row of amax 1e-38: 1/scale is not finite (fp8_row_maxabs step 5)",
    )
    nvfp4 = {"format": "nvfp4", "layout": "block_scale_k16_m128x4_v1"}
    t2 = {"format": "t2_g128_fp16", "layout": row_split}
    for spec, shape in ((nvfp4, (128, 64)), (t2, (2, 200))):
        yield Failure(
            f"{spec['format']}.{spec['layout']}",
            "no-encoder",
            spec,
            shape,
            np.ones(shape, np.float32),
            (f"ninfer3.codec.{spec['layout']}.no_encoder",),
            f"{spec['format']} has no value encoder: import words instead",
        )


def encoder_of(fmt: str, f: Failure) -> str:
    """The case.json `encoder`: the VQF default mode, the `.ninfer` pair's encoder, or ""."""
    if fmt == "vqf":
        return VQF_CODECS[f.codec["name"]].default_mode
    return NINFER3_CODECS[(f.codec["format"], f.codec["layout"])].encoder or ""


def reference_rejection(fmt: str, f: Failure) -> tuple[str, str]:
    """(error class, rule id) the reference raises for `f`; the generator refuses a case whose
    input the reference encodes, or rejects under a rule the case does not list."""
    try:
        if fmt == "vqf":
            REFERENCE.vqf_codecs.codec(f.codec["name"]).encode(f.values, *f.shape)
        else:
            codec = REFERENCE.ninfer_codecs.get_codec(f.codec["format"], f.codec["layout"])
            codec.encode(f.values, f.shape)
    except WeightfileError as exc:
        found = (type(exc).__name__, exc.violation.rule)
        if found[1] not in f.rules:
            raise RuntimeError(f"{f.topic}/{f.name}: the reference says {found}") from None
        return found
    raise RuntimeError(f"{f.topic}/{f.name}: the reference encoded an input it must refuse")


def corpus_cases(fmt: str, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, no want.json) of one container's encode failures."""
    for f in vqf_failures() if fmt == "vqf" else ninfer3_failures():
        error_class, rule = reference_rejection(fmt, f)
        fields: dict[str, Any] = {
            "expect": "reject", "codec": f.codec, "shape": [str(n) for n in f.shape],
            "values": "values.bin", "values_dtype": "float32", "encoder": encoder_of(fmt, f),
            "description": f.description,
            "rule": rule, "error_class": error_class,
            "accepted": [{"error_class": error_class, "rule": r} for r in f.rules],
        }  # fmt: skip
        values = np.ascontiguousarray(f.values, dtype="<f4").tobytes()
        yield f"{prefix}/codec/{f.topic}/encode-{f.name}", fields, {"values.bin": values}, None
