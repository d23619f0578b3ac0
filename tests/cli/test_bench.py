"""`weightfile bench` end to end on the tiny synthetic model, in a temporary cache folder."""

import json
import os

import pytest

from weightfile.bench import engines
from weightfile.bench.report import SCHEMA
from weightfile.cli import main
from weightfile.fast._native import library
from weightfile.ref.vqf.read import open_vqf

FAST = engines.fast_open_model() is not None
FAST_MATRIX = engines.fast_matrix_from_entry() is not None


@pytest.fixture(autouse=True)
def quick_timing(monkeypatch):
    """One timed call per rate: these tests check the report, not the machine."""
    from weightfile.bench import measure

    monkeypatch.setattr(measure, "MIN_SECONDS", 0.0)
    monkeypatch.setattr(measure, "REPEATS", 1)


QUICK = ["--bandwidth-mib", "8", "--tokens", "2", "--threads", "1", "2"]


def bench_json(capsys, cache, *extra):
    assert main(["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(cache), "--json",
                 *QUICK, *extra]) == 0  # fmt: skip
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_json_report_schema(tmp_path, capsys):
    r, err = bench_json(capsys, tmp_path)
    assert "generated" in err
    assert r["schema"] == SCHEMA
    assert set(r) == {
        "schema", "machine", "model", "fast_engine", "open_seconds", "checksum_bytes_per_s",
        "checksum_bytes_hashed",
        "dequantize", "memory_bandwidth", "matvec", "forward", "decode_speedup", "roofline",
        "peak_rss", "targets", "notes",
    }  # fmt: skip
    assert r["model"]["synthetic"] == "tiny-q4_0" and r["model"]["family"] == "q4"
    assert r["model"]["geometry"]["hidden"] == 64
    assert r["fast_engine"] is FAST
    for key in ("open_seconds", "checksum_bytes_per_s"):
        assert r[key] > 0
    assert r["dequantize"]["tensor"] == "q4_gate" and r["dequantize"]["bytes_per_s"] > 0
    assert r["memory_bandwidth"]["threads"] == os.cpu_count()
    with open_vqf(r["model"]["path"]) as vqf:  # every covered byte (spec/vqf.md §3.5)
        covered = len(vqf.directory_bytes()) + len(vqf.data_region())
    assert r["checksum_bytes_hashed"] == (
        covered if library() is not None else min(covered, 1 << 20)
    )
    roof = r["roofline"]
    assert roof["weight_bytes_per_token"] == 52_352  # tests/bench/test_roofline.py by hand
    single = r["memory_bandwidth"]["single_core_bytes_per_s"]
    assert roof["single_core_tokens_per_s"] == pytest.approx(single / 52_352)
    ref = r["forward"][0]
    assert (ref["engine"], ref["method"], ref["decode_tokens"]) == ("ref", "measured", 2)
    assert ref["decode_tokens_per_s"] > 0 and ref["open_seconds"] > 0
    rss = r["peak_rss"]
    assert rss["engine"] == ("fast" if FAST else "ref")
    assert rss["peak_rss_bytes"] >= rss["baseline_rss_bytes"] > 0
    assert rss["bound"]["file_bytes"] == r["model"]["file_bytes"]


def test_fast_rows_follow_the_engine(tmp_path, capsys):
    r, _ = bench_json(capsys, tmp_path, "--no-rss")
    assert r["peak_rss"] is None
    if FAST:
        assert [f["threads"] for f in r["forward"][1:]] == [1, 2]
        assert set(r["decode_speedup"]) == {"1", "2"}
    else:  # never the reference under the fast label
        assert [f["engine"] for f in r["forward"]] == ["ref"]
        assert r["decode_speedup"] is None
        assert any("no fast engine" in n for n in r["notes"])
    assert (r["matvec"] is not None) is FAST_MATRIX
    if FAST_MATRIX:
        assert [m["tensor"] for m in r["matvec"]][-1] == "q4_lm"


def test_second_run_reuses_the_cache(tmp_path, capsys):
    bench_json(capsys, tmp_path, "--no-rss")
    files = sorted(p.name for p in tmp_path.iterdir())
    _, err = bench_json(capsys, tmp_path, "--no-rss")
    assert "generated" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == files == [files[0]]


def test_table_output(tmp_path, capsys):
    args = ["bench", "--synthetic", "tiny-q8_0", "--cache-dir", str(tmp_path), "--no-rss"]
    assert main([*args, *QUICK]) == 0
    out = capsys.readouterr().out
    for label in ("machine", "open_vqf", "checksum", "memory read bandwidth",
                  "decode tokens/s, ref ×1", "decode roofline tokens/s"):  # fmt: skip
        assert label in out
    assert ("n/a (no fast engine)" in out) is not FAST


def test_model_path_and_errors(tmp_path, capsys):
    bench_json(capsys, tmp_path, "--no-rss")
    (model,) = tmp_path.iterdir()
    assert main(["bench", str(model), "--no-rss", *QUICK]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(model.name)  # named by its path
    assert main(["bench", "--synthetic", "nope", "--cache-dir", str(tmp_path)]) == 2  # usage
    assert "bench.synthetic.name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # a bad number is argparse's one-line error
        main(["bench", str(model), "--tokens", "0"])
    assert usage.value.code == 2
    assert main(["bench", str(tmp_path / "missing.vqf"), "--no-rss", *QUICK]) == 4  # cannot read


def test_an_encrypted_model_is_benched_with_its_passphrase(tmp_path, capsys, monkeypatch):
    """--passphrase-file (else VLLM_VQF_KEY) opens an ENC model; the child gets the key through
    its environment; without a key the run stops before measuring (spec/vqf.md §4.2)."""
    monkeypatch.delenv("VLLM_VQF_KEY", raising=False)
    cache = tmp_path / "cache"
    plain_report, _ = bench_json(capsys, cache, "--no-rss")
    (model,) = cache.iterdir()
    pw, enc = tmp_path / "pw", tmp_path / "enc.vqf"
    pw.write_bytes(b"bench secret\n")
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    capsys.readouterr()
    assert main(["bench", str(enc), "--json", *QUICK, "--passphrase-file", str(pw)]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["model"]["encrypted"] is True and plain_report["model"]["encrypted"] is False
    assert r["model"]["geometry"] == plain_report["model"]["geometry"]
    assert r["dequantize"]["tensor"] == plain_report["dequantize"]["tensor"]
    assert r["roofline"]["weight_bytes_per_token"] == 52_352
    assert r["forward"][0]["decode_tokens_per_s"] > 0
    assert r["peak_rss"]["peak_rss_bytes"] >= r["peak_rss"]["baseline_rss_bytes"] > 0  # the child
    assert any("encrypted model" in n for n in r["notes"])
    monkeypatch.setenv("VLLM_VQF_KEY", "bench secret")
    assert main(["bench", str(enc), "--json", "--no-rss", *QUICK]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["encrypted"] is True
    monkeypatch.delenv("VLLM_VQF_KEY")
    assert main(["bench", str(enc), "--no-rss", *QUICK]) == 3  # no key: unverifiable
    assert "vqf.enc.no_key" in capsys.readouterr().err
    monkeypatch.setenv("VLLM_VQF_KEY", "wrong")
    assert main(["bench", str(enc), "--no-rss", *QUICK]) == 1
    assert "vqf.enc.tag" in capsys.readouterr().err


class StandInMatrix:
    """Plays the fast engine's matrix: the fast codec's float32 decode, a NumPy product (layer
    0's values stand in for every layer's)."""

    def __init__(self, vqf, name, rows, cols, layer=0):
        from weightfile.bench.measure import dequantize_layer0

        self.values = dequantize_layer0(vqf, name, rows, cols)
        self.shape = (rows, cols)
        self.nbytes = len(vqf.payload(vqf.entry(name))) // vqf.header.arch["n_layers"]

    def matvec(self, x, threads=1):
        return self.values @ x


def test_fast_rows_are_reported_when_an_engine_exists(tmp_path, capsys, monkeypatch):
    # a stand-in engine (the reference model, a NumPy matvec) exercises the report's fast
    # plumbing on a tree without weightfile.fast.qwen3; the real engine replaces it when merged
    from weightfile.bench import engines

    open_model = lambda vqf, threads=1: engines.open_ref(vqf)  # noqa: E731
    monkeypatch.setattr(engines, "fast_open_model", lambda: open_model)
    monkeypatch.setattr(engines, "fast_matrix_from_entry", lambda: StandInMatrix)
    r, _ = bench_json(capsys, tmp_path, "--no-rss")
    assert r["fast_engine"] is True and r["notes"] == []
    ref, *fast = r["forward"]
    assert [(f["engine"], f["threads"], f["method"]) for f in fast] == [
        ("fast", 1, "measured"),
        ("fast", 2, "measured"),
    ]
    for f in fast:
        want = f["decode_tokens_per_s"] / ref["decode_tokens_per_s"]
        assert r["decode_speedup"][str(f["threads"])] == pytest.approx(want)
    names = [m["tensor"] for m in r["matvec"]]
    assert names == ["q4_q", "q4_k", "q4_v", "q4_o", "q4_gate", "q4_up", "q4_down", "q4_lm"]
    single = r["memory_bandwidth"]["single_core_bytes_per_s"]
    for m in r["matvec"]:
        assert set(m["bytes_per_s"]) == {"1", "2"}
        assert m["single_core_bandwidth_fraction"]["1"] == pytest.approx(
            m["bytes_per_s"]["1"] / single
        )


def test_help_lists_every_synthetic_model(capsys):
    from weightfile.bench.synthetic import SPECS

    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse may wrap at hyphens
    assert all(name in text for name in SPECS)
