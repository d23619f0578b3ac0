"""Qwen3.5 text (gated attention + Gated DeltaNet) as a textbook, on the canonical numerics
(qwen-math §1.4, ninfer-v3.md §6, spec/numerics.md §16-§19).

    from weightfile.ref.ninfer3.read import open_artifact
    from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer

    with open_artifact("model.ninfer") as nf:
        config, weights = bind_ninfer(nf)
    model = Qwen35Model(config, weights)
    logits = model.forward([1, 2, 3], model.new_cache())   # float32 [3, vocab]

`weights_from_hf(state_dict, hf_config)` builds the same pair from a transformers checkpoint;
`text_config_from_hf` and `canonical_from_hf` are its two halves, and `hf_names.source` maps
one parameter at a time, for importers that stream tensors.
"""

from .bind import bind_ninfer
from .config import Qwen35Config, validate_text_config
from .hf import canonical_from_hf, text_config_from_hf, weights_from_hf
from .model import Qwen35Cache, Qwen35Model
from .weights import Qwen35Weights, weights_from_parameters

__all__ = [
    "Qwen35Cache",
    "Qwen35Config",
    "Qwen35Model",
    "Qwen35Weights",
    "bind_ninfer",
    "canonical_from_hf",
    "text_config_from_hf",
    "validate_text_config",
    "weights_from_hf",
    "weights_from_parameters",
]
