"""Bind a VISION VQF file to the fast Qwen3-VL model (spec/vqf.md §vision-tensors, §arch-semantics):
the text tower as fast/qwen3 binds it, the vision matrices as FastMatrix views of the mapped
payload.

The checks and errors are ref/qwen3_vl/bind_vqf.py's, in its order: its `bind_vision_with` runs
with FastMatrix readers (the arch fields, each tensor's presence, qtype and size), and the zero
fc2 padding is checked on the reference's decoding of v_q8_fc2 alone.
"""

from __future__ import annotations

from weightfile.fast.numerics.matrix import FastMatrix, matrix_from_entry
from weightfile.fast.qwen3.bind import bind as bind_text
from weightfile.ref.qwen3.bind_vqf import (
    codec_matrix_words,
    read_norm,
    require_entry,
    require_layout,
)
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision_with, read_vision_q8, special_ids
from weightfile.ref.qwen3_vl.config import VisionConfig, VisionWeights
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import InvalidError
from weightfile.spec.numerics.profile import QuantizedMatmul
from weightfile.spec.vqf.qtypes import QType


def _q8(vqf: VQFFile, name: str, layers: int, out: int, inp: int, mode) -> list[FastMatrix]:
    """A `v_q8_*` matrix per block: Q8_0 only (read_vision_q8's rule), then read_matrices'."""
    e = require_entry(vqf, name)
    if e.qtype != QType.Q8_0:
        raise InvalidError(
            "vqf.bind.qtype",
            f"{name}: qtype {e.qtype}, vision matrices are Q8_0",
            offset=e.entry_offset,
            path=f"directory[{e.index}]",
        )
    require_layout(e, (QType.Q8_0,), layers * out * inp)
    return [matrix_from_entry(vqf, e, out, inp, layer=i, mode=mode) for i in range(layers)]


def _dense(vqf: VQFFile, name: str, layers: int, out: int, inp: int) -> list[FastMatrix]:
    """An F32 matrix per layer (read_norm's checks: F32, size), for the spec/numerics.md §matmul
    dot."""
    read_norm(vqf, name, layers, out * inp)
    e = require_entry(vqf, name)
    return [matrix_from_entry(vqf, e, out, inp, layer=i) for i in range(layers)]


def bind_vision(
    vqf: VQFFile, text_width: int, mode: QuantizedMatmul
) -> tuple[VisionConfig, VisionWeights]:
    """The tower's config and weights, FastMatrix for every matrix (ref's bind_vision_with)."""
    return bind_vision_with(
        vqf,
        text_width,
        q8=lambda name, layers, out, inp: _q8(vqf, name, layers, out, inp, mode),
        dense=lambda name, layers, out, inp: _dense(vqf, name, layers, out, inp),
        fc2_codes=lambda fc2: read_vision_q8(
            vqf, "v_q8_fc2", len(fc2), fc2[0].rows, fc2[0].cols, codec_matrix_words
        ),
    )


def bind_vl(vqf: VQFFile, mode: QuantizedMatmul, projection_set: str | None = None):
    """(text config, text FastWeights, vision config, vision weights, special ids)."""
    tc, tw = bind_text(vqf, mode, projection_set)
    vc, vw = bind_vision(vqf, tc.hidden_size, mode)
    return tc, tw, vc, vw, special_ids(vqf.header.arch)
