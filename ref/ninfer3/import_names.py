"""The importer's view of the transformers -> canonical mapping (ninfer-v3.md §6.2).

The mapping itself is `weightfile.ref.qwen35.hf_names`, shared with `canonical_from_hf`; the
importer reads one tensor at a time through it and reports a tensor that does not fit the
config under its own rule id, `qwen35.import.shape`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from weightfile.ref.qwen35 import hf_names
from weightfile.ref.qwen35.hf_names import LM_HEAD, Source, source, text_model_prefix
from weightfile.spec.ninfer3.text_names import TextParameter

SHAPE_RULE = "qwen35.import.shape"

__all__ = ["LM_HEAD", "SHAPE_RULE", "Source", "parameter_values", "source", "text_model_prefix"]


def parameter_values(
    parameter: TextParameter, src: Source, tensor: Callable[[str], np.ndarray]
) -> np.ndarray:
    """The parameter's float32 values in its canonical shape, or InvalidError(SHAPE_RULE)."""
    return hf_names.parameter_values(parameter, src, tensor, SHAPE_RULE)
