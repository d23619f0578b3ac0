"""Roofline and memory-bound arithmetic, checked against hand numbers and the issue's own."""

import pytest

from weightfile.bench.peak_rss import rss_bound
from weightfile.bench.roofline import roofline_tokens_per_s, weight_bytes_per_token
from weightfile.bench.synthetic import SPECS, synthetic_model
from weightfile.ref.vqf.read import open_vqf


def test_issue_roofline_numbers():
    # issue 6: ≈ 376 MB of weights per token against a roofline of ≈ 77 tokens/s, i.e. a read
    # bandwidth of about 29 GB/s
    assert roofline_tokens_per_s(376_000_000, 29e9) == pytest.approx(77.1, abs=0.1)


def test_tiny_q4_weight_bytes_per_token_by_hand(tmp_path):
    # tiny: hidden 64, ffn 128, 4 heads / 2 kv heads × 16, 2 layers, vocab 256
    per_layer = 64 * 64 + 2 * (32 * 64) + 64 * 64 + 3 * (128 * 64)  # q, k+v, o, gate+up+down
    elements = 2 * per_layer + 256 * 64  # + lm_head
    quant = elements * 18 // 32  # Q4_0: 18 bytes per 32 elements
    norms = 4 * (64 + 2 * 2 * 64 + 2 * 2 * 16)  # final, attn+ffn per layer, q+k per layer
    embed_row = 64 * 2  # one F16 row
    path, _ = synthetic_model("tiny-q4_0", tmp_path)
    with open_vqf(path) as vqf:
        assert weight_bytes_per_token(vqf) == quant + norms + embed_row == 52_352


def test_rss_bound_by_hand():
    c = SPECS["qwen3-0.6b-q4_0"].config
    b = rss_bound(646_672_392, c, positions=16, prefill=8)
    assert b.kv_cache_bytes == 28 * 16 * 2 * (8 * 128) * 4  # layers·positions·(K,V)·kv_dim·f32
    assert b.activation_bytes == 4 * 8 * 151_936 * 4  # 4 × the [8, vocab] float32 logits
    assert b.total == 646_672_392 + 3_670_016 + 19_447_808


def test_dual_file_counts_only_the_bound_family(tmp_path):
    # wmode dual (spec/vqf.md §weight-modes) carries q8_* and q4_*; the decoder binds q4, so a token
    # reads q4
    from weightfile.bench.synthetic import arch_of, tensor_sources
    from weightfile.ref.vqf.write import write_vqf

    q4, q8 = SPECS["tiny-q4_0"], SPECS["tiny-q8_0"]
    extra = [t for t in tensor_sources(q8) if t.name.startswith("q8_")]
    path = write_vqf(tmp_path / "dual.vqf", arch=arch_of(q4), flags=q4.flags,
                     tensors=[*tensor_sources(q4), *extra])  # fmt: skip
    with open_vqf(path) as vqf:
        assert {e.name for e in vqf.entries} >= {"q8_q", "q4_q", "q8_lm", "q4_lm"}
        assert weight_bytes_per_token(vqf) == 52_352  # the q4-only file's count, by hand above
