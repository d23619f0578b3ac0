"""Float tensors into the bytes of a dense VQF file (spec/vqf.md §flags, §encodings, §text-tensors).

Two facts every writer of a dense Qwen3 file needs, whatever its source (a checkpoint, the
demo's closed-form model, a seeded synthetic model, a conformance case):

* `file_flags`: the header flags of an engine-style file: an F16 token embedding (EMB_F16,
  spec/vqf.md §flags) unless every tensor is F32, plus the two tiling flags for a tiled file;
* `encode`: one [out, in] matrix in the layout that its qtype, the flags and its shape select (the
  registry's `codec_for`, spec/vqf.md §encodings, §text-tensors), so what is written is what the
  binder reads back.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.backend import REFERENCE, Backend
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType


def file_flags(qtype: QType, layout: str) -> int:
    """EMB_F16 unless f32; with layout "tiled" also Q8_8X8 | Q4_4X4 (spec/vqf.md §flags)."""
    flags = 0 if qtype == QType.F32 else VQFFlag.EMB_F16
    if layout == "tiled":
        flags |= VQFFlag.Q8_8X8 | VQFFlag.Q4_4X4
    return int(flags)


def encode(
    qtype: QType,
    flags: int,
    name: str,
    m: np.ndarray,
    backend: Backend = REFERENCE,
    mode: str | None = None,
) -> bytes:
    """One [out, in] matrix in the layout the flags and its shape select (spec/vqf.md §encodings,
    §text-tensors).

    F32 and F16 matrices are the reference-precision files' plain encodings; quantized ones take
    the registry's layout for the entry name (tiled, or untiled where the shape is not whole
    tiles, spec/vqf.md §q8-tiled), quantised by encoder `mode` (the codec's default when None,
    spec/vqf.md §quantisation). The codecs are `backend`'s: the reference ones, or (a caller's
    choice) the fast ones, which produce the same bytes (tests/differential)."""
    rows, cols = m.shape
    if qtype == QType.F32:
        codec = "f32"
    elif qtype == QType.F16:
        codec = "f16"
    else:
        codec = codec_for(qtype, flags, name, shape=(rows, cols))
    if mode is None or qtype in (QType.F32, QType.F16):
        return backend.vqf_codecs.codec(codec).encode(m, rows, cols)
    return backend.vqf_codecs.codec(codec).encode(m, rows, cols, mode=mode)
