"""Qwen3-VL: the vision tower, the multimodal prompt and DeepStack on ref/qwen3's text decoder
(spec/models.md §qwen3-vl; spec/numerics.md §vision).

    config.py    VisionConfig, SpecialIds and the tower's weights
    numerics.py  LayerNorm, the GELUs, bilinear resampling, the 2-D rotary
    vision.py    VisionTower: patch embedding … mergers, with its trace names
    bind_vqf.py  a VISION VQF file to the text and vision configs and weights (spec/vqf.md
    §vision-tensors) model.py     Qwen3VLModel: image rows, get_rope_index positions, DeepStack
    trace.py     the family's trace-name entry
"""
