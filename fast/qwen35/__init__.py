"""Qwen3.5 text (gated attention + Gated DeltaNet, dense and MoE) on `.ninfer` weights in their
payload encoding, bit for bit `weightfile.ref.qwen35` (spec/models.md §qwen35, spec/ninfer3.md
§qwen35-text, spec/numerics.md §lanes8-tree, §gdn).

    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.fast.qwen35 import open_model

    nf = open_artifact("model.ninfer")        # keep it open while the model is used
    model = open_model(nf, threads=2)
    logits = model.forward([1, 2, 3], model.new_cache())   # float32 [3, vocab]

The public surface mirrors the reference family's (`bind_ninfer`, the config, the model and its
cache), so the parts later issues add (vision, MTP) can be added to both.
"""

from __future__ import annotations

from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.ref.qwen35.weights import Qwen35Weights
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .bind import bind_ninfer
from .matrix import NfMatrix
from .model import FastQwen35Cache, FastQwen35Model


def open_model(
    nf: Artifact, *, threads: int = 1, profile: NumericsProfile = CANONICAL
) -> FastQwen35Model:
    """Bind an open `.ninfer` file like `ref.qwen35.bind_ninfer` (same checks and errors); the
    projections stay views of the mapped file, so keep `nf` open while the model is used."""
    config, weights = bind_ninfer(nf)
    return FastQwen35Model(config, weights, profile, threads)


__all__ = [
    "FastQwen35Cache",
    "FastQwen35Model",
    "NfMatrix",
    "Qwen35Config",
    "Qwen35Weights",
    "bind_ninfer",
    "open_model",
    "validate_text_config",
]
