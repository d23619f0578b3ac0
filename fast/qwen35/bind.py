"""The fast Qwen3.5 binder: an open `.ninfer` file to (config, weights) whose projections stay in
the mapped payloads (spec/ninfer3.md §validation, §qwen35-text, §binding).

The checks are the reference binder's own functions, in its order (`weightfile.ref.qwen35.bind`).
Then every parameter is taken in the reference's order, each object met for the first time is
checked as the reference's decode checks it (the fast codec's `validate`, the same rules in the
same order, for an object read in place; the fast codec's `decode` otherwise), so a broken file
fails with the reference's first error. Projections become `NfMatrix` segments
(fast/qwen35/matrix.py); direct parameters (norms, gates, the convolution) are decoded to float32
as the reference decodes them; a bf16 token embedding stays as its words, widened per looked-up
row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.ref.codecs.ninfer3.checks import raise_first
from weightfile.ref.ninfer3.bindings import ElementRange
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.qwen35.bind import (
    ObjectDecoder,
    bind_config,
    check_resources,
    check_unexpected,
    check_uses,
    resolve,
)
from weightfile.ref.qwen35.config import Qwen35Config
from weightfile.ref.qwen35.weights import Qwen35Weights, weights_from_parameters
from weightfile.spec.codecs.ninfer3.layouts import CONTIGUOUS_LE_V1
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter, text_parameters

from .matrix import NfHadamard, NfMatrix, Segment, float_segment, in_kernel

EMBEDDING = TEXT_PREFIX + "token_embedding"


@dataclass
class Bf16Rows:
    """A [rows, cols] bf16 `contiguous_le_v1` table read in place (the token embedding)."""

    words: np.ndarray  # uint16 [rows, cols], a view of the payload

    @property
    def shape(self) -> tuple[int, int]:
        return self.words.shape

    def rows(self, ids: list[int]) -> np.ndarray:
        """float32 [len(ids), cols]: bf16 widened exactly (<< 16, spec/ninfer3.md §contiguous)."""
        return (self.words[ids].astype(np.uint32) << np.uint32(16)).view(np.float32)


class PayloadReader:
    """Objects as the reference binder meets them: checked once, in first-use order."""

    def __init__(self, nf: Artifact) -> None:
        self.nf = nf
        self.decoder = ObjectDecoder(nf, get_codec)
        self.checked: dict[str, np.ndarray] = {}

    def in_place(self, object_id: str) -> np.ndarray | None:
        """The object's payload bytes (uint8, no copy) after the decode checks, when the kernel
        reads it in place; None when it must be decoded."""
        o = self.nf.object(object_id)
        assert o.format is not None and o.layout is not None and o.shape is not None
        if not in_kernel(o.format, o.layout):
            self.decoder.flat(object_id)  # decoded (and checked) now, in the reference's order
            return None
        if object_id not in self.checked:
            payload = self.nf.object_bytes(object_id)
            raise_first(get_codec(o.format, o.layout).validate(payload, o.shape))
            self.checked[object_id] = np.frombuffer(payload, dtype=np.uint8)
        return self.checked[object_id]

    def segment(self, r: ElementRange, cols: int) -> Segment | None:
        """Range r as whole rows of its object, or None when it splits a row."""
        o = self.nf.object(r.object_id)
        assert o.shape is not None and o.format is not None and o.layout is not None
        data = self.in_place(r.object_id)
        if len(o.shape) != 2 or o.shape[1] != cols or r.begin % cols or r.end % cols:
            return None
        row0, rows = r.begin // cols, (r.end - r.begin) // cols
        if data is None:
            flat = self.decoder.flat(r.object_id)[r.begin : r.end]
            return float_segment(flat.reshape(rows, cols))
        return Segment(data, o.format, o.layout, (o.shape[0], cols), row0, rows)

    def matrix(self, ranges: list[ElementRange], shape: tuple[int, int]) -> NfMatrix:
        segments = [self.segment(r, shape[1]) for r in ranges]
        if any(s is None for s in segments):  # a range splits a row: the decoded values
            values = self.decoder.parameter(ranges, shape)
            return NfMatrix(*shape, [float_segment(values)])
        return NfMatrix(*shape, [s for s in segments if s is not None])

    def direct(self, p: TextParameter, ranges: list[ElementRange]) -> np.ndarray | Bf16Rows:
        """A direct parameter as float32, or the bf16 embedding's words in place."""
        if p.name == EMBEDDING and len(ranges) == 1:
            o = self.nf.object(ranges[0].object_id)
            if (o.format, o.layout, o.shape) == ("bf16", CONTIGUOUS_LE_V1, p.shape):
                data = self.in_place(o.id)
                assert data is not None
                return Bf16Rows(data.view("<u2").reshape(p.shape))
        return self.decoder.parameter(ranges, p.shape)


def bind_ninfer(nf: Artifact) -> tuple[Qwen35Config, Qwen35Weights]:
    """Bind the text component of an opened `.ninfer` file like `ref.qwen35.bind_ninfer` (same
    checks, same errors); the projections are `NfMatrix` views of the mapped file, so keep `nf`
    open while the weights are used."""
    config = bind_config(nf)
    check_resources(nf)
    params = {p.name: p for p in text_parameters(config.json)}
    ranges = {name: resolve(nf, p) for name, p in params.items()}
    check_unexpected(nf, params)
    signs = check_uses(nf, params)
    reader = PayloadReader(nf)
    values = {
        name: reader.direct(p, ranges[name])
        if p.direct_format is not None
        else reader.matrix(ranges[name], p.shape)  # type: ignore[arg-type]
        for name, p in params.items()
    }
    weights = weights_from_parameters(
        config, values, signs, matrix=lambda m: m, embedding=lambda e: e, rotated=NfHadamard
    )
    return config, weights
