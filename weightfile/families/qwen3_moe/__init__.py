"""The Qwen3-MoE family (version-3 VQF, spec/vqf.md §text-tensors, §arch-semantics): its API-side
code, named by its row in weightfile/families/registry.py (the model itself is ref/qwen3_moe and
fast/qwen3_moe).

    hf_names.py      where each Qwen3-MoE router and expert weight is in a checkpoint
    to_vqf.py        the importer: a Qwen3-MoE checkpoint -> a version-3 VQF file
    from_gguf.py     the importer: a llama.cpp qwen3moe GGUF file -> a version-3 VQF file
    importers.py     the converters the convert dispatch runs (src, dst, ConvertOptions)
    presets.py       the synthetic bench models
    conformance.py   the `vqf-moe-model` conformance cases
"""
