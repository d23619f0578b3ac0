"""The Qwen3 dense decoder on weights in their file encoding, bit for bit equal to ref.qwen3."""

from __future__ import annotations

from weightfile.fast.numerics.matrix import FastMatrix, matrix_from_entry
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .bind import bind
from .decoder import FastKVCache, FastQwen3Model


def open_model(
    vqf: VQFFile, *, threads: int = 1, profile: NumericsProfile = CANONICAL
) -> FastQwen3Model:
    """Bind a dense Qwen3 / Qwen3-VL-text VQF like ref.qwen3.bind_vqf (same checks and errors);
    the weights stay views of the mapped file, so keep `vqf` open while the model is used."""
    config, weights = bind(vqf, profile.quantized_matmul)
    return FastQwen3Model(config, weights, profile, threads)


__all__ = ["FastKVCache", "FastMatrix", "FastQwen3Model", "matrix_from_entry", "open_model"]
