"""The Qwen3 dense decoder (and the Qwen3-VL text tower) as a textbook, on the canonical numerics
(spec/models.md §1.1, §1.2).

    config.py    Qwen3Config, the hyper-parameters the forward pass needs
    weights.py   the in-memory weights and their shape check
    bind_vqf.py  a VQF file to (config, weights) (spec/vqf.md §7, §8)
    decoder.py   Qwen3Model: the forward pass, its blocks built from `weightfile.ref.layers`
    trace.py     the trace-name table the blocks record under (spec/numerics.md §10)
    board/       the board model: the decoder under the kestrel-board profile (spec/numerics.md §20)
"""
