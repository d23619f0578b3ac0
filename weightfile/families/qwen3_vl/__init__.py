"""The Qwen3-VL family (VQF with flag VISION, spec/vqf.md §vision-tensors): its API-side code, named
by its row in weightfile/families/registry.py (the model itself is ref/qwen3_vl and fast/qwen3_vl).

    hf_names.py      where each Qwen3-VL vision and text weight is in a transformers checkpoint
    to_vqf.py        the importer: a Qwen3-VL checkpoint -> a VQF file with VISION
    importers.py     the converters the convert dispatch runs (src, dst, ConvertOptions)
    presets.py       the synthetic bench models
    conformance.py   the `vqf-vl-model` conformance cases
"""
