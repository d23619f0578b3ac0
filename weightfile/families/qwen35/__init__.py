"""The Qwen3.5 family (`.ninfer`, dense and MoE, spec/ninfer3.md §qwen35-text): its API-side code,
named by its row in weightfile/families/registry.py (the model itself is ref/qwen35).

    hf_names.py                 where each canonical Qwen3.5 parameter is in a checkpoint
    hf.py                       config.json -> the closed text config; a state dict -> weights
    to_ninfer_config.py         the importer's text config: refusals and implicit values
    to_ninfer_plan.py           the importer's parents, bindings and uses
    to_ninfer.py                the importer: a Qwen3.5 checkpoint -> a `.ninfer` file set
    importers.py                the converter the convert dispatch runs (src, dst, ConvertOptions)
    conformance.py              the `ninfer3-model` conformance cases
    conformance_files.py        their model files: seeded parameters, configs, resources
    conformance_mutations.py    the rejected model files: one mutation each
"""
