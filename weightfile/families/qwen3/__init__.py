"""The dense Qwen3 family (VQF, spec/vqf.md §inventory, §arch-semantics): its API-side code, named
by its row in weightfile/families/registry.py (the model itself is ref/qwen3 and fast/qwen3).

    hf_names.py            where each Qwen3 weight is in a transformers checkpoint
    hf.py                  config.json -> Qwen3Config; a state dict -> ModelWeights
    to_vqf.py              the importer: a Qwen3 checkpoint -> a VQF file
    from_gguf.py           the importer: a llama.cpp qwen3 GGUF file -> a VQF file
    importers.py           the converters the convert dispatch runs (src, dst, ConvertOptions)
    presets.py             the synthetic bench models
    conformance.py         the `vqf-model` conformance cases (and `run`, `digest`, shared by the
                           other families' model cases)
    board_conformance.py   the `vqf-board-model` cases: the kestrel-board model of Qwen3
"""
