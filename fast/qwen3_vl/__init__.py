"""Qwen3-VL on weights in their file encoding, bit for bit equal to ref.qwen3_vl (spec/models.md
§qwen3-vl; spec/numerics.md §vision).

    numerics.py  LayerNorm (fast/csrc/vision.c), the GELUs (gelu.c), bilinear resampling, 2-D rotary
    vision.py    FastVisionTower: all patches of all images per step, the reference's trace names
    bind.py      a VISION VQF to FastMatrix views (the reference binder's checks and errors)
    model.py     FastQwen3VLModel: image rows, DeepStack and positions around FastQwen3Model
"""

from __future__ import annotations

from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .bind import bind_vl
from .model import FastQwen3VLModel
from .vision import FastVisionTower


def open_model(
    vqf: VQFFile, *, threads: int = 1, profile: NumericsProfile = CANONICAL
) -> FastQwen3VLModel:
    """The registry's `fast` entry: bind a VISION VQF like ref.qwen3_vl.bind_vqf (same checks and
    errors); the weights stay views of the mapped file, so keep `vqf` open while it is used."""
    tc, tw, vc, vw, ids = bind_vl(vqf, profile.quantized_matmul)
    return FastQwen3VLModel(tc, tw, vc, vw, ids, profile, threads)


__all__ = ["FastQwen3VLModel", "FastVisionTower", "open_model"]
