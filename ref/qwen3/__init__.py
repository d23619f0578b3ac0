"""The Qwen3 dense decoder (and the Qwen3-VL text tower) as a textbook, on the canonical numerics
(spec/models.md §qwen3, §qwen3-vl).

    config.py    Qwen3Config, the hyper-parameters the forward pass needs
    weights.py   the in-memory weights and their shape check
    bind_vqf.py  a VQF file to (config, weights) (spec/vqf.md §inventory, §arch-semantics)
    decoder.py   Qwen3Model: the forward pass, its blocks built from `weightfile.ref.layers`
    trace.py     the trace-name table the blocks record under (spec/models.md §qwen3-forward)
    board/       the board model: the decoder under the kestrel-board profile (spec/numerics.md
    §board)
"""
