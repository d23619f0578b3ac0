"""Conversion: Hugging Face checkpoints and GGUF files into the containers, and VQF into GGUF
(spec/vqf.md §converter, §arch-semantics, spec/ninfer3.md §qwen35-text).

Not part of the oracle: `ref/` says what the bytes and the models mean, this package says how a
checkpoint becomes those bytes. It holds the format-level code; each model family's importers,
name maps and config readers live in its folder, `weightfile/families/<family>/`. One module
per idea:

    checkpoint.py   the checkpoint folder: JSON files, chat template, and the one safetensors
                    reader (lazy, sizes checked before allocation)
    vqf_plan.py     VQFPlan: the VQF engine converter's options (wmode, layout, quantizer, ...)
    dispatch.py     `weightfile convert SRC DST`: which converter a (source kind, target kind)
                    pair runs, the table derived from the family rows; ConvertOptions
    vqf_gguf.py     the exporter: a Qwen3 or Qwen3-MoE VQF file -> a llama.cpp GGUF file

Nothing is imported here, so `import weightfile.convert.checkpoint` stays cheap.
"""
