"""The dense Qwen3 family's synthetic bench models (weightfile/bench/synthetic.py, issue 6).

Qwen3-0.6B (the issue's numbers) and Qwen3-VL-2B's text tower (spec/vqf.md §worked-example; theta
from its public config): a dense file of that geometry. `tiny-*` is for tests: every dimension a
multiple of the tiling groups.
"""

from __future__ import annotations

from weightfile.bench.synthetic_spec import SyntheticSpec, both_qtypes

PRESETS: tuple[SyntheticSpec, ...] = (
    *both_qtypes("qwen3-0.6b", dict(vocab=151_936, hidden=1024, intermediate=3072, layers=28,
                                    heads=16, kv_heads=8, head_dim=128)),
    *both_qtypes("qwen3-vl-2b-text", dict(vocab=151_936, hidden=2048, intermediate=6144,
                                          layers=28, heads=16, kv_heads=8, head_dim=128,
                                          rope_theta=5e6)),
    *both_qtypes("tiny", dict(vocab=256, hidden=64, intermediate=128, layers=2, heads=4,
                              kv_heads=2, head_dim=16, max_seq_len=512)),
)  # fmt: skip
