"""The MoE synthetic model and the bytes-read roofline (weightfile/bench/moe_bytes.py, issue 17)."""

from __future__ import annotations

import pytest

from weightfile.bench.moe_bytes import (
    bytes_per_token,
    decoded_experts,
    expert_bytes,
    moe_roofline,
    shared_bytes,
)
from weightfile.bench.synthetic import SPECS, planned_layout, spec_named, synthetic_model
from weightfile.families import vqf_family
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import NotFoundError

Q4 = 18 / 32  # Q4_0: 32 elements in 18 bytes (spec/vqf.md §q4-0)


def test_qwen3_30b_a3b_geometry_by_hand():
    rows, size = planned_layout(SPECS["qwen3-30b-a3b-q4_0"])
    sizes = {name: n for name, _, n in rows}
    assert sizes["q4_gate"] == sizes["q4_up"] == sizes["q4_down"] == 48 * 128 * 768 * 2048 * Q4
    assert sizes["moe_router"] == 48 * 128 * 2048 * 4  # F32
    assert sizes["q4_q"] == 48 * 32 * 128 * 2048 * Q4 and sizes["q4_k"] == 48 * 4 * 128 * 2048 * Q4
    assert 17.6e9 < size < 17.8e9  # the issue's ~17.7 GB


def test_fewer_layers_by_suffix():
    s = spec_named("qwen3-30b-a3b-q8_0-L4")
    assert (s.layers, s.experts, s.top_k, s.name) == (4, 128, 8, "qwen3-30b-a3b-q8_0-L4")
    for bad in ("qwen3-30b-a3b-q8_0-L0", "qwen3-30b-a3b-q8_0-L49", "nope-L2"):
        with pytest.raises(NotFoundError):
            spec_named(bad)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path, _ = synthetic_model("tiny-moe-q4_0", tmp_path_factory.mktemp("syn"))
    return path


def test_bytes_per_token_by_hand(tiny):
    # tiny-moe: d 64, 2 layers, q 4x16, kv 2x16, E 8 of Ie 32, vocab 256, q4_0
    norms = (64 + 2 * 64 + 2 * 64 + 2 * 16 + 2 * 16) * 4
    router = 2 * 8 * 64 * 4
    attention = 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64) * Q4
    lm, embed_row = 256 * 64 * Q4, 64 * 2  # F16 embedding
    one_expert = 3 * 32 * 64 * Q4
    with open_vqf(tiny) as vqf:
        assert shared_bytes(vqf) == norms + router + attention + lm + embed_row
        assert expert_bytes(vqf) == one_expert
        # two tokens: 2 + 2 experts, then 2 + 1 (one expert listed twice is read once)
        got = bytes_per_token(vqf, [[[0, 1], [2, 3]], [[4, 5], [6, 6]]])
        assert got == shared_bytes(vqf) + one_expert * 7 / 2


def test_decoded_tokens_read_k_experts_per_layer(tiny):
    with open_vqf(tiny) as vqf:
        model = vqf_family(vqf).reference_model(vqf)
        chosen = decoded_experts(model, [1, 2, 3], 3)
        assert len(chosen) == 3 and all(len(t) == 2 for t in chosen)
        assert all(len(set(layer)) == 2 and max(layer) < 8 for t in chosen for layer in t)
        roof = moe_roofline(vqf, chosen, 1e9)
    assert roof["weight_bytes_per_token"] == shared_bytes_of(tiny) + 4 * 3 * 32 * 64 * Q4
    assert roof["weight_bytes_per_token"] < roof["all_experts_bytes_per_token"]
    assert roof["tokens_per_s"] == 1e9 / roof["weight_bytes_per_token"]


def shared_bytes_of(path):
    with open_vqf(path) as vqf:
        return shared_bytes(vqf)


def test_the_bench_report_counts_only_the_chosen_experts(tmp_path, capsys):
    """`bench` on an MoE file: its moe_roofline reads, per decoded token, the shared tensors plus
    exactly top_k distinct experts in every layer (top-k never picks an expert twice), and its tg
    rows' rooflines use those bytes, not every expert's."""
    import json

    from weightfile.cli import main

    argv = ["bench", "--synthetic", "tiny-moe-q4_0", "--cache-dir", str(tmp_path), "-o", "json",
            "--bandwidth-mib", "8", "-p", "2", "-n", "3", "-r", "1", "-t", "1", "--no-rss",
            "--no-ref", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (path,) = tmp_path.glob("tiny-moe-q4_0-*.vqf")
    with open_vqf(path) as vqf:
        arch = vqf.header.arch
        by_hand = shared_bytes(vqf) + arch["n_layers"] * arch["top_k"] * expert_bytes(vqf)
        every = shared_bytes(vqf) + arch["n_layers"] * arch["n_experts"] * expert_bytes(vqf)
    moe = report["moe_roofline"]
    assert moe["weight_bytes_per_token"] == by_hand < moe["all_experts_bytes_per_token"] == every
    assert moe["decoded_tokens"] == 3
    (tg,) = [t for t in report["tests"] if t["test"] == "tg3"]
    bandwidth = report["memory_bandwidth"]["by_threads"]["1"]
    assert tg["roofline_tokens_per_s"] == pytest.approx(bandwidth / round(by_hand))
