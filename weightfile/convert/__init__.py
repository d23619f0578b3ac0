"""Conversion: Hugging Face checkpoints into the containers (spec/vqf.md §8, spec/ninfer3.md §6).

Not part of the oracle: `ref/` says what the bytes and the models mean, this package says how a
transformers checkpoint becomes those bytes. One module per idea:

    checkpoint.py             the checkpoint folder: JSON files, chat template, and the one
                              safetensors reader (lazy, sizes checked before allocation)
    hf_names_qwen3.py         where each Qwen3 weight is in a transformers checkpoint
    qwen3_hf.py               config.json -> Qwen3Config; a state dict -> ModelWeights
    qwen3_vqf.py              the importer: a Qwen3 checkpoint -> a VQF file
    hf_names_qwen3_moe.py     where each Qwen3-MoE router and expert weight is in a checkpoint
    qwen3_moe_vqf.py          the importer: a Qwen3-MoE checkpoint -> a version-3 VQF file
    hf_names_qwen35.py        where each canonical Qwen3.5 parameter is in a checkpoint
    qwen35_hf.py              config.json -> the closed text config; a state dict -> weights
    qwen35_ninfer_config.py   the importer's text config: refusals and implicit values
    qwen35_ninfer_plan.py     the importer's parents, bindings and uses
    qwen35_ninfer.py          the importer: a Qwen3.5 checkpoint -> a `.ninfer` file set

Nothing is imported here, so `import weightfile.convert.checkpoint` stays cheap.
"""
