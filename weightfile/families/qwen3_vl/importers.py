"""The Qwen3-VL family's converters as the convert dispatch runs them, (src, dst, ConvertOptions)
-> the published paths (weightfile/convert/dispatch.py; spec/vqf.md §vision-tensors, §converter)."""

from __future__ import annotations

from pathlib import Path

from weightfile.convert.options import ConvertOptions, family_hf_to_vqf
from weightfile.spec.errors import UnsupportedError

#: A Hugging Face Qwen3-VL folder -> VQF with VISION (weightfile/families/qwen3_vl/to_vqf.py).
hf_to_vqf = family_hf_to_vqf("weightfile.families.qwen3_vl.to_vqf:import_vl_checkpoint", "Qwen3-VL")


def refuse_gguf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """GGUF Qwen3-VL (qwen3vl text + clip mmproj) -> VQF is not written (spec/vqf.md §converter)."""
    raise UnsupportedError(
        "vqf.import.source",
        f"{src.name}: a Qwen3-VL GGUF does not convert to VQF: llama.cpp splits the model into a "
        "text GGUF and an mmproj (clip) GGUF, and VQF's VISION tensors (spec/vqf.md §7.4) "
        "would have to be joined from both; convert the Hugging Face folder instead",
    )
