"""Qwen3.5 text (gated attention + Gated DeltaNet) as a textbook, on the canonical numerics
(spec/models.md §qwen35, spec/ninfer3.md §qwen35-text, spec/numerics.md §log, §gdn, spec/models.md
§qwen35-forward, §qwen35-trace).

    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer

    with open_artifact("model.ninfer") as nf:
        config, weights = bind_ninfer(nf)
    model = Qwen35Model(config, weights)
    logits = model.forward([1, 2, 3], model.new_cache())   # float32 [3, vocab]

A transformers checkpoint becomes the same pair through `weightfile.families.qwen35.hf`
(conversion is not part of the oracle).
"""

from .bind import bind_ninfer
from .config import Qwen35Config, validate_text_config
from .model import Qwen35Cache, Qwen35Model
from .weights import Qwen35Weights, weights_from_parameters

__all__ = [
    "Qwen35Cache",
    "Qwen35Config",
    "Qwen35Model",
    "Qwen35Weights",
    "bind_ninfer",
    "validate_text_config",
    "weights_from_parameters",
]
