"""The Qwen3-MoE family's converters as the convert dispatch runs them, (src, dst,
ConvertOptions) -> the published paths (weightfile/convert/dispatch.py; spec/vqf.md §converter,
§arch-semantics)."""

from __future__ import annotations

from pathlib import Path

from weightfile.convert.options import ConvertOptions, family_hf_to_vqf, gguf_importer_to_vqf

#: A Hugging Face Qwen3-MoE folder -> a version-3 VQF (weightfile/families/qwen3_moe/to_vqf.py).
hf_to_vqf = family_hf_to_vqf("weightfile.families.qwen3_moe.to_vqf:import_qwen3_moe", "Qwen3-MoE")


def gguf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A llama.cpp qwen3moe GGUF file -> a version-3 VQF, copying Q8_0/Q4_0 blocks
    (weightfile/families/qwen3_moe/from_gguf.py)."""
    from .from_gguf import import_gguf_moe

    return gguf_importer_to_vqf(import_gguf_moe, src, dst, options)
