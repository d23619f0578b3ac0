"""Qwen3-MoE (the VQF version-3 model) as a textbook, on the canonical numerics
(spec/models.md §qwen3-moe).

    config.py    Qwen3MoeConfig: the Qwen3 sizes plus the expert counts
    weights.py   the in-memory weights: Qwen3 attention, a router and per-expert SwiGLU matrices
    bind_vqf.py  a version-3 VQF file to (config, weights), the expert bands sliced per expert
                 (spec/vqf.md §text-tensors, §arch-semantics)
    decoder.py   Qwen3MoeModel: ref.qwen3's attention, the MoE block of `weightfile.ref.layers.moe`
    trace.py     the trace-name table (router logits, selected experts, their weights, MoE output)
"""
