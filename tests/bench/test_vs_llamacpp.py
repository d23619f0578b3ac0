"""benchmarks/vs_llamacpp.py's own parts: the GGUF it writes for llama.cpp (read back by gguf-py's
reader), its bytes per token against ours, and the test-list parser."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from weightfile.bench.synthetic import SPECS  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vs_llamacpp.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("vs_llamacpp", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("qtype", "block"), [("q4_0", 18), ("q8_0", 34)])
def test_gguf_is_qwen3_with_every_matrix_in_one_type(script, tmp_path, qtype, block):
    s = SPECS[f"tiny-{qtype}"]
    path = script.write_gguf(s, qtype, tmp_path / "tiny.gguf")
    r = gguf.GGUFReader(path)
    field = lambda k: r.fields[k].contents()  # noqa: E731
    assert field("general.architecture") == "qwen3"
    assert (field("qwen3.block_count"), field("qwen3.embedding_length")) == (2, 64)
    assert (field("qwen3.attention.head_count"), field("qwen3.attention.head_count_kv")) == (4, 2)
    assert (field("qwen3.attention.key_length"), field("qwen3.vocab_size")) == (16, 256)
    assert field("tokenizer.ggml.model") == "none"
    want = gguf.GGMLQuantizationType.Q4_0 if qtype == "q4_0" else gguf.GGMLQuantizationType.Q8_0
    tensors = {t.name: t for t in r.tensors}
    assert len(tensors) == 3 + 11 * 2
    for t in tensors.values():
        if t.name.endswith("norm.weight"):
            assert t.tensor_type == gguf.GGMLQuantizationType.F32
            assert np.all(np.asarray(t.data) == 1)
        else:  # llama-quantize --pure: one type; 32 elements a block
            assert t.tensor_type == want and t.n_bytes == t.n_elements // 32 * block
    assert list(tensors["blk.0.attn_k.weight"].shape) == [64, 32]  # ne: [in, out]
    assert list(tensors["output.weight"].shape) == [64, 256]
    scales = np.asarray(tensors["blk.1.ffn_down.weight"].data).reshape(-1, block)[:, :2]
    d = scales.copy().view(np.float16).astype(np.float32)
    assert np.all(np.isfinite(d)) and np.all(d > 0)


def test_same_bytes_per_token_but_the_embedding_row(script, tmp_path):
    """Ours (tests/bench/test_roofline.py by hand: 52,352 for tiny-q4_0) has an F16 embedding
    row (64 · 2 bytes); llama.cpp's is a Q4_0 row (2 blocks · 18 bytes)."""
    path = script.write_gguf(SPECS["tiny-q4_0"], "q4_0", tmp_path / "tiny.gguf")
    assert script.gguf_bytes_per_token(path) == 52_352 - 64 * 2 + 2 * 18


def test_tests_option(script):
    t = script.Tests("pp64,pp512,tg64")
    assert (t.pp, t.tg, t.llama_flags()) == ([64, 512], [64], ["-p", "64,512", "-n", "64"])
    assert script.Tests("tg8").llama_flags() == ["-p", "0", "-n", "8"]
    for bad in ("", "pp", "xx64", "pp6x"):
        with pytest.raises(Exception, match="ppN or tgN"):
            script.Tests(bad)


def test_median_table_takes_quiet_rounds_only(script):
    key = "tg64/q4_0/1"
    rounds = [
        {"quiet": True, "weightfile": {key: 30.0}, "llama": {key: 40.0}, "ratio": {key: 0.75}},
        {"quiet": False, "weightfile": {key: 10.0}, "llama": {key: 40.0}, "ratio": {key: 0.25}},
        {"quiet": True, "weightfile": {key: 34.0}, "llama": {key: 40.0}, "ratio": {key: 0.85}},
    ]
    (row,) = script.median_table(rounds, quiet_only=True)[2:]
    assert row == "| tg64 | q4_0 | 1 | 32.0 | 40.0 | 0.80 | 2 |"
    (row,) = script.median_table(rounds, quiet_only=False)[2:]
    assert row == "| tg64 | q4_0 | 1 | 30.0 | 40.0 | 0.75 | 3 |"


@pytest.mark.parametrize(
    ("probes", "want"),
    [
        ([(1.02, 1.01), (1.10, 1.05)], True),
        ([(1.02, 1.01), (1.16, 1.05)], False),  # the pair ran slower than one loop alone
        ([(1.01, 6.0), (1.02, 1.01)], False),  # saturated by other jobs: alone as slow as two
    ],
)
def test_a_round_is_quiet_only_when_every_probe_passes_both_rules(script, probes, want):
    assert script.is_quiet(probes, 1.15) is want


@pytest.mark.parametrize(("machine", "amx_off"), [("x86_64", True), ("aarch64", False)])
def test_the_native_build_keeps_amx_out_on_x86_only(script, monkeypatch, machine, amx_off):
    """A KVM guest that reports AMX faulted on llama.cpp's `tileloadd` (SIGILL): the x86-64 build
    turns the AMX ISA off for C and C++ alike; other machines get no x86 flags."""
    monkeypatch.setattr(script.platform, "machine", lambda: machine)
    flags = script.no_amx_flags()
    if not amx_off:
        assert flags == []
        return
    for lang in ("C", "CXX"):
        (value,) = [f for f in flags if f.startswith(f"-DCMAKE_{lang}_FLAGS=")]
        assert {"-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"} <= set(
            value.split("=", 1)[1].split()
        )


def test_a_crashed_llama_bench_is_named_by_its_signal(script, tmp_path):
    """The SIGILL of an AMX build on a guest that faults on tiles printed only "failed (-4)"."""
    fake = tmp_path / "llama-bench"
    fake.write_text("#!/bin/sh\nkill -ILL $$\n")
    fake.chmod(0o755)
    with pytest.raises(SystemExit, match=r"failed \(SIGILL: an instruction this CPU refused"):
        script.llama_rows(fake, tmp_path / "m.gguf", script.Tests("tg64"), [1], 1)
    assert script.exit_reason(3) == "exit 3"
    assert script.exit_reason(-9) == "SIGKILL"


@pytest.fixture(scope="module")
def qwen35_script():
    path = SCRIPT.with_name("vs_llamacpp_qwen35.py")
    spec = importlib.util.spec_from_file_location("vs_llamacpp_qwen35", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "kind"), [("tiny-qwen35-q8_g32_fp16", "q8_0"),
                                            ("tiny-qwen35-moe-bf16", "bf16")])  # fmt: skip
def test_qwen35_gguf_names_shapes_and_keys(qwen35_script, tmp_path, name, kind):
    """llama.cpp's qwen35 / qwen35moe names and shapes (ne = [in, out, experts]) for the tiny
    presets (4 layers, the 4th full attention; hidden 64, GDN 2 key / 4 value heads × 16), read
    back by gguf-py."""
    s = SPECS[name]
    r = gguf.GGUFReader(qwen35_script.write_gguf(s, kind, tmp_path / "t.gguf"))
    arch = "qwen35moe" if s.experts else "qwen35"
    field = lambda k: r.fields[k].contents()  # noqa: E731
    assert field("general.architecture") == arch
    assert (field(f"{arch}.ssm.group_count"), field(f"{arch}.ssm.time_step_rank")) == (2, 4)
    assert (field(f"{arch}.ssm.state_size"), field(f"{arch}.ssm.inner_size")) == (16, 64)
    assert field(f"{arch}.rope.dimension_sections") == [1, 1, 0, 0]
    t = {x.name: x for x in r.tensors}
    assert list(t["blk.0.attn_qkv.weight"].shape) == [64, 2 * 32 + 64]
    assert list(t["blk.0.ssm_conv1d.weight"].shape) == [4, 128]
    assert list(t["blk.3.attn_q.weight"].shape) == [64, 2 * 4 * 16]  # the query and its gate
    assert "blk.3.attn_qkv.weight" not in t and "blk.0.attn_q.weight" not in t
    assert t["token_embd.weight"].tensor_type == gguf.GGMLQuantizationType.BF16
    want = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "bf16": gguf.GGMLQuantizationType.BF16}[kind]
    assert t["blk.0.ssm_out.weight"].tensor_type == want
    if s.experts:
        assert list(t["blk.0.ffn_gate_exps.weight"].shape) == [64, 32, 8]
        assert list(t["blk.0.ffn_down_exps.weight"].shape) == [32, 64, 8]
        assert field(f"{arch}.expert_used_count") == 2


def test_a_depth_is_part_of_the_key_and_of_the_test_name(script):
    """llama-bench's JSON rows and our jsonl rows both carry n_prompt, n_gen, n_depth, n_threads
    (llama-bench.cpp's fields); a depth shows as llama-bench's markdown names it, `tg64 @ d256`."""
    theirs = {"n_prompt": 0, "n_gen": 64, "n_depth": 256, "n_threads": 2, "avg_ts": 9.0}
    ours = {"test": "tg64 @ d256", "n_prompt": 0, "n_gen": 64, "n_depth": 256, "n_threads": 2}
    assert script.row_key(theirs) == script.row_key(ours) == ("tg64", 256, 2)
    assert script.row_key({"n_prompt": 512, "n_gen": 0, "n_threads": 1}) == ("pp512", 0, 1)
    assert script.key_text(("tg64", 256, 2), "q8_0") == "tg64 @ d256/q8_0/2"
    assert script.key_text(("pp64", 0, 1), "q4_0") == "pp64/q4_0/1"
    key = "tg64 @ d256/q4_0/2"
    rounds = [{"quiet": True, "weightfile": {key: 20.0}, "llama": {key: 25.0}, "ratio": {key: 0.8}}]
    (row,) = script.median_table(rounds, quiet_only=True)[2:]
    assert row == "| tg64 @ d256 | q4_0 | 2 | 20.0 | 25.0 | 0.80 | 1 |"


def test_depths_option(script):
    import argparse

    p = argparse.ArgumentParser()
    assert script.parse_depths("0,256,1024,256", p) == [0, 256, 1024]
    for bad in ("-1", "0,x", ""):
        with pytest.raises(SystemExit):
            script.parse_depths(bad, p)


FAKE_LLAMA_BENCH = """#!{python}
import json, sys
a = sys.argv
opt = lambda name: [int(v) for v in a[a.index(name) + 1].split(",")]
rows = [{{"n_prompt": p, "n_gen": 0, "n_depth": d, "n_threads": t, "avg_ts": 100.0 + d}}
        for t in opt("-t") for d in opt("-d") for p in opt("-p") if p]
rows += [{{"n_prompt": 0, "n_gen": n, "n_depth": d, "n_threads": t, "avg_ts": 10.0 + d}}
         for t in opt("-t") for d in opt("-d") for n in opt("-n") if n]
print(json.dumps(rows))
"""


def test_both_sides_get_the_depths_and_key_alike(script, tmp_path):
    """A stand-in llama-bench answers with one row per (threads, depth, test) it was asked for
    (so a missing -d gives no depth rows); our side runs `weightfile bench` on tiny-q4_0."""
    import sys

    from weightfile.bench import engines

    fake = tmp_path / "llama-bench"
    fake.write_text(FAKE_LLAMA_BENCH.format(python=sys.executable))
    fake.chmod(0o755)
    tests, depths = script.Tests("pp4,tg2"), [0, 3]
    theirs, _ = script.llama_rows(fake, tmp_path / "m.gguf", tests, [1], 1, depths)
    want = [("pp4", 0, 1), ("pp4", 3, 1), ("tg2", 0, 1), ("tg2", 3, 1)]
    assert sorted(theirs) == want and theirs[("tg2", 3, 1)] == 13.0
    if engines.fast_open_model() is None:
        pytest.skip("our side's rows need the fast engine (C kernels)")
    ours, _ = script.weightfile_rows("tiny-q4_0", tests, [1], 1, str(tmp_path / "syn"), depths)
    assert sorted(ours) == want
