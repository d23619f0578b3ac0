"""The Qwen3-MoE family's synthetic bench models (weightfile/bench/synthetic.py, issue 17).

Qwen3-30B-A3B: 128 experts of 768, top 8, every layer MoE; the whole q4_0 file is ~17 GB, so
benchmarks take a few layers with the `-L<n>` suffix (weightfile.bench.synthetic.spec_named).
`tiny-moe-*` is for tests.
"""

from __future__ import annotations

from weightfile.bench.synthetic_spec import QTYPES, MoeSyntheticSpec

PRESETS: tuple[MoeSyntheticSpec, ...] = (
    *(
        MoeSyntheticSpec(
            name=f"qwen3-30b-a3b-{q}", qtype=q, vocab=151_936, hidden=2048,
            intermediate=128 * 768, layers=48, heads=32, kv_heads=4, head_dim=128,
            experts=128, top_k=8, moe_ffn=768,
        )
        for q in QTYPES
    ),
    *(
        MoeSyntheticSpec(
            name=f"tiny-moe-{q}", qtype=q, vocab=256, hidden=64, intermediate=8 * 32, layers=2,
            heads=4, kv_heads=2, head_dim=16, max_seq_len=512, experts=8, top_k=2, moe_ffn=32,
        )
        for q in QTYPES
    ),
)  # fmt: skip
