"""The Qwen3.5 / 3.6 family's synthetic `.ninfer` bench models (bench/synthetic_ninfer.py,
issue 28 item 3), each in q8_g32_fp16 and bf16.

* `qwen35-0.8b`: Qwen3.5-0.8B's published text geometry (its config.json `text_config`, as public
  copies of it give it): hidden 1024, 24 layers with full attention every 4th, 8 query / 2 KV heads
  × 256, GDN 16 key / 16 value heads × 128, FFN 3584, vocab 248,320, tied embeddings, partial
  rotary 0.25, theta 10^7, MRoPE sections 11/11/10;
* `qwen36-27b`: hidden 5120, 64 layers, 24 / 4 heads × 256, GDN 16 / 48 heads × 128, FFN 17408;
* `qwen36-35b-a3b`: hidden 2048, 40 layers, 16 / 2 heads × 256, GDN 16 / 32 heads × 128, 256
  experts of 512 (top 8) and a shared expert of 512;
* `tiny-qwen35`, `tiny-qwen35-moe`: for tests.

The big ones are benchmarked with `-L<n>` (weightfile.bench.synthetic.spec_named): the first n
layers, the same weights.
"""

from __future__ import annotations

from weightfile.bench.synthetic_spec import NinferSyntheticSpec, both_ninfer_formats

VOCAB = 248_320

PRESETS: tuple[NinferSyntheticSpec, ...] = (
    *both_ninfer_formats("qwen35-0.8b", dict(
        vocab=VOCAB, hidden=1024, layers=24, heads=8, kv_heads=2, head_dim=256,
        gdn_key_heads=16, gdn_value_heads=16, intermediate=3584, tied=True)),
    *both_ninfer_formats("qwen36-27b", dict(
        vocab=VOCAB, hidden=5120, layers=64, heads=24, kv_heads=4, head_dim=256,
        gdn_key_heads=16, gdn_value_heads=48, intermediate=17408)),
    *both_ninfer_formats("qwen36-35b-a3b", dict(
        vocab=VOCAB, hidden=2048, layers=40, heads=16, kv_heads=2, head_dim=256,
        gdn_key_heads=16, gdn_value_heads=32, experts=256, top_k=8, moe_ffn=512,
        shared_ffn=512)),
    *both_ninfer_formats("tiny-qwen35", dict(
        vocab=256, hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16, gdn_key_heads=2,
        gdn_value_heads=4, gdn_head_dim=16, intermediate=128, mrope_section=(1, 1, 0),
        max_seq_len=512)),
    *both_ninfer_formats("tiny-qwen35-moe", dict(
        vocab=256, hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16, gdn_key_heads=2,
        gdn_value_heads=4, gdn_head_dim=16, experts=8, top_k=2, moe_ffn=32, shared_ffn=32,
        mrope_section=(1, 1, 0), max_seq_len=512)),
)  # fmt: skip
