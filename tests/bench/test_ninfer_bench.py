"""The `.ninfer` bench (weightfile/bench/ninfer.py, synthetic_ninfer.py; issue 28 item 3): the
synthetic files against hand-derived sizes and the whole-parent encoder, bytes per token against
a hand derivation from the file's objects, a whole report on the tiny model."""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.bench import ninfer, synthetic_ninfer
from weightfile.bench.report import Plan
from weightfile.bench.synthetic import SPECS, planned_layout, spec_named, synthetic_model
from weightfile.bench.table import format_md
from weightfile.fast.qwen35 import open_model
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer
from weightfile.ref.qwen35.bind import bind_config


def test_qwen35_08b_matrix_bytes_by_hand():
    """Qwen3.5-0.8B in q8_g32_fp16: 34 bytes per 32 weights (K = 1024 and 3584 are multiples of
    128: no row padding); bf16 embedding (the tied head) and direct parameters."""
    rows, size = planned_layout(SPECS["qwen35-0.8b-q8_g32_fp16"])
    sizes = {name: b for name, _, b in rows}
    h, ffn, v = 1024, 3584, 248_320
    assert sizes["w.token_embedding"] == v * h * 2
    # a GDN layer's {q, k, v, z}: 2048 + 2048 + 2048 + 2048 rows of 1024
    assert sizes["w.layers/0/gdn/query+key+value+z"] == 8192 * h * 34 // 32
    # an attention layer's {Q, K, gate, V}: 8·256 + 2·256 + 8·256 + 2·256 rows
    assert sizes["w.layers/3/attention/query+key+gate+value"] == 5120 * h * 34 // 32
    assert sizes["w.layers/0/mlp/down"] == h * ffn * 34 // 32
    assert size > 0.95e9
    assert "w.output_head" not in sizes  # tied: bound to the embedding's object


@pytest.mark.parametrize("name", ["tiny-qwen35-q8_g32_fp16", "tiny-qwen35-moe-bf16"])
def test_chunked_parents_equal_whole_encoding(monkeypatch, name):
    """Drawn and encoded in chunks of a few rows, every object's bytes are the reference codec's
    encoding of the whole parent (the chunks' values joined)."""
    s = spec_named(name)
    _, parents, _ = synthetic_ninfer.plan(s)
    monkeypatch.setattr(synthetic_ninfer, "CHUNK_ELEMENTS", 3 * 64)
    for index, p in enumerate(parents):
        chunked = b"".join(synthetic_ninfer.parent_bytes(s, index, p))
        values = np.concatenate(
            [synthetic_ninfer.parent_chunk(s, index, p, r0, n)
             for r0, n in synthetic_ninfer.row_chunks(p)]
        )  # fmt: skip
        assert chunked == get_codec(p.format, p.layout).encode(values, p.shape), p.id


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("syn35")
    return {n: synthetic_model(n, folder)[0] for n in ("tiny-qwen35-q8_g32_fp16",
                                                       "tiny-qwen35-moe-bf16")}  # fmt: skip


@pytest.mark.parametrize("name", ["tiny-qwen35-q8_g32_fp16", "tiny-qwen35-moe-bf16"])
def test_synthetic_file_runs_fast_equal_ref(tiny, name):
    with open_artifact(tiny[name]) as nf:
        fast, ref = open_model(nf), Qwen35Model(*bind_ninfer(nf))
        a = fast.forward([1, 2, 3], fast.new_cache())
        b = ref.forward([1, 2, 3], ref.new_cache())
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("name", ["tiny-qwen35-q8_g32_fp16", "tiny-qwen35-moe-bf16"])
def test_bytes_per_token_by_hand(tiny, name):
    """Untied: every tensor object whole, but the embedding (one row of it) and the routed
    experts' two parents per layer (top_k / experts of them)."""
    s = spec_named(name)
    with open_artifact(tiny[name]) as nf:
        c = bind_config(nf)
        got, macs, _ = ninfer.per_token(nf, c)
        want = 0.0
        for o in nf.directory.objects:
            if o.kind != "tensor":
                continue
            share = 1.0
            if o.id == "w.token_embedding":
                share = 1 / s.vocab
            elif "/moe/experts/" in o.id:
                share = s.top_k / s.experts
            want += share * o.bytes
    assert got == round(want)
    assert macs > 0


def test_tiny_report(tiny):
    report = ninfer.run_ninfer_bench(
        tiny["tiny-qwen35-q8_g32_fp16"], plan=Plan([1], [4], [2], 1), synthetic="tiny",
        rss=False, bandwidth_buffer=1 << 20,
    )  # fmt: skip
    assert [(t["engine"], t["test"]) for t in report["tests"]] == [
        ("ref", "tg2"), ("fast", "pp4"), ("fast", "tg2")
    ]  # fmt: skip
    assert report["tests"][0]["method"] == "measured"  # tiny: below REF_MEASURE_LIMIT
    assert report["decode_speedup"]["1"] > 1
    assert report["model"]["family"] == "qwen35"
    text = format_md(report)
    assert "open_ninfer" in text and "weight bytes per decoded token" in text


def test_rss_bound_terms_by_hand():
    s = spec_named("qwen35-0.8b-q8_g32_fp16")
    from weightfile.ref.qwen35.config import validate_text_config

    b = ninfer.rss_bound(1000, validate_text_config(s.config_json), positions=10, prefill=5)
    # 18 GDN layers: conv window 3 × (2·2048 + 2048) channels + 16 heads × 128 × 128 states
    assert b["recurrent_state_bytes"] == 18 * (3 * 6144 + 16 * 128 * 128) * 4
    # 6 attention layers: K and V of 2 KV heads × 256 per position
    assert b["kv_cache_bytes"] == 6 * 10 * 2 * 2 * 256 * 4
    assert (
        b["total"]
        == 1000 + b["recurrent_state_bytes"] + b["kv_cache_bytes"] + b["activation_bytes"]
    )
