"""The Qwen3-MoE decoder on weights in their file encoding, bit for bit equal to ref.qwen3_moe."""

from __future__ import annotations

from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .bind import bind
from .decoder import FastQwen3MoeModel


def open_model(
    vqf: VQFFile, *, threads: int = 1, profile: NumericsProfile = CANONICAL
) -> FastQwen3MoeModel:
    """Bind a version-3 VQF like ref.qwen3_moe.bind_vqf (same checks and errors); the weights
    stay views of the mapped file, so keep `vqf` open while the model is used."""
    config, weights = bind(vqf, profile.quantized_matmul)
    return FastQwen3MoeModel(config, weights, profile, threads)


__all__ = ["FastQwen3MoeModel", "open_model"]
