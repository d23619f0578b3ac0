"""The Qwen3-VL family's synthetic bench models (weightfile/bench/synthetic.py, issue 6).

Qwen3-VL-2B with its vision tower (spec/vqf.md §worked-example; the public vision_config, as in
spec/models.md §qwen3-vl: DeepStack after blocks 5, 11, 17). `tiny-vl-*` is for tests: vf = 80 pads
fc2 to 96 columns (spec/vqf.md §vision-tensors).
"""

from __future__ import annotations

from weightfile.bench.synthetic_spec import QTYPES, VLSyntheticSpec

PRESETS: tuple[VLSyntheticSpec, ...] = (
    *(
        VLSyntheticSpec(
            name=f"qwen3-vl-2b-{q}", qtype=q, vocab=151_936, hidden=2048, intermediate=6144,
            layers=28, heads=16, kv_heads=8, head_dim=128, rope_theta=5e6, vis_depth=24,
            vis_hidden=1024, vis_heads=16, vis_ffn=4096, vis_max_pos=2304, deepstack=(5, 11, 17),
        )
        for q in QTYPES
    ),
    *(
        VLSyntheticSpec(
            name=f"tiny-vl-{q}", qtype=q, vocab=256, hidden=64, intermediate=128, layers=2,
            heads=4, kv_heads=2, head_dim=16, max_seq_len=512, vis_depth=2, vis_hidden=64,
            vis_heads=4, vis_ffn=80, vis_max_pos=64, deepstack=(0,), mrope_section=(4, 2, 2),
            special_ids=(250, 251, 252, 253),
        )
        for q in QTYPES
    ),
)  # fmt: skip
