"""Model families: the registry (`registry.py`, one `Family` row per family) and one folder per
family holding its API-side code (converters, Hugging Face name maps, GGUF mappings, synthetic
bench presets, conformance builders):

    registry.py   the `Family` rows and the lookups by container and architecture
    qwen3/        the dense Qwen3 text decoder (VQF), and its kestrel-board model's cases
    qwen3_vl/     Qwen3-VL: the vision tower on the dense decoder (VQF, flag VISION)
    qwen3_moe/    Qwen3-MoE (version-3 VQF)
    qwen35/       Qwen3.5, dense and MoE (`.ninfer`)

The registry's public names are re-exported here, so `weightfile.families.lookup` and the like
read as before; importing this package imports no family folder.
"""

from .registry import (
    NINFER,
    QWEN3,
    QWEN3_MOE,
    QWEN3_VL,
    ROWS,
    VQF,
    Builder,
    Family,
    Importer,
    Model,
    Refusal,
    builders,
    importers,
    index,
    lookup,
    named,
    ninfer_family,
    presets,
    resolve,
    text_architecture,
    text_family_of,
    unknown,
    vqf_architecture,
    vqf_family,
)

__all__ = [
    "NINFER",
    "QWEN3",
    "QWEN3_MOE",
    "QWEN3_VL",
    "ROWS",
    "VQF",
    "Builder",
    "Family",
    "Importer",
    "Model",
    "Refusal",
    "builders",
    "importers",
    "index",
    "lookup",
    "named",
    "ninfer_family",
    "presets",
    "resolve",
    "text_architecture",
    "text_family_of",
    "unknown",
    "vqf_architecture",
    "vqf_family",
]
