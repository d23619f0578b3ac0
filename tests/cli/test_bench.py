"""`weightfile bench` end to end on the tiny synthetic model, in a temporary cache folder."""

import csv
import io
import json
import os
import re
import statistics
from datetime import datetime

import pytest

from weightfile.bench import engines
from weightfile.bench.report import SCHEMA
from weightfile.cli import build_parser, main
from weightfile.fast._native import library
from weightfile.ref.vqf.read import open_vqf

FAST = engines.fast_open_model() is not None
FAST_MATRIX = engines.fast_matrix_from_entry() is not None
#: tiny-q4_0's weight bytes per token (tests/bench/test_roofline.py derives it by hand)
PER_TOKEN = 52_352


@pytest.fixture(autouse=True)
def quick_timing(monkeypatch):
    """One timed call per rate: these tests check the report, not the machine."""
    from weightfile.bench import measure, report

    monkeypatch.setattr(measure, "MIN_SECONDS", 0.0)
    monkeypatch.setattr(measure, "REPEATS", 1)
    monkeypatch.setattr(report, "BW_REPEATS", 1)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One synthetic cache for the tests that do not check the generation itself."""
    return tmp_path_factory.mktemp("synthetic")


QUICK = ["--bandwidth-mib", "8", "-p", "2", "-n", "2", "-r", "1", "--threads", "1", "2"]


def bench_out(capsys, cache, *extra, quick=QUICK):
    assert main(["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(cache),
                 *quick, *extra]) == 0  # fmt: skip
    captured = capsys.readouterr()
    return captured.out, captured.err


def bench_json(capsys, cache, *extra, quick=QUICK):
    out, err = bench_out(capsys, cache, "--json", *extra, quick=quick)
    return json.loads(out), err


def tiny_params():
    """Elements of tiny-q4_0 from its geometry (synthetic.SPECS), counted by hand: the embedding
    V·d once (the lm_head is tied to it, as llama-bench counts a tied model), per layer q/o
    d·q_dim each, k/v d·kv_dim each, gate/up/down d·ff each, two d-norms and two head_dim-norms;
    the final norm d."""
    v, d, ff, layers, q_dim, kv_dim, hd = 256, 64, 128, 2, 4 * 16, 2 * 16, 16
    layer = 2 * d * q_dim + 2 * d * kv_dim + 3 * d * ff + 2 * d + 2 * hd
    return v * d + layers * layer + d


def test_a_tied_qwen3_0_6b_counts_its_embedding_once():
    """Qwen3-0.6B's geometry (V 151936, d 1024, ff 3072, 28 layers, 16 q heads and 8 kv heads
    of 128): by hand 151936·1024 = 155,582,464 for the embedding; per layer q and o 1024·2048
    each, k and v 1024·1024 each, gate/up/down 1024·3072 each and norms 2·1024 + 2·128, so
    15,730,944; ×28 = 440,466,432; the final norm 1024: 596,049,920 (llama-bench: 596.05 M).
    The synthetic file also stores q4_lm [V, d], written from the embedding: not counted."""
    from types import SimpleNamespace

    from weightfile.bench.report import model_params

    v, d, ff, nl, q, kv, hd = 151_936, 1024, 3072, 28, 2048, 1024, 128
    shapes = {"token_embed": (v, d), "final_norm": (d, 1), "attn_norm": (nl * d, 1),
              "ffn_norm": (nl * d, 1), "q_norm": (nl * hd, 1), "k_norm": (nl * hd, 1),
              "q4_q": (nl * q, d), "q4_k": (nl * kv, d), "q4_v": (nl * kv, d),
              "q4_o": (nl * d, q), "q4_gate": (nl * ff, d), "q4_up": (nl * ff, d),
              "q4_down": (nl * d, ff), "q4_lm": (v, d)}  # fmt: skip
    entries = [SimpleNamespace(name=n, rows=r, cols=c) for n, (r, c) in shapes.items()]
    vqf = SimpleNamespace(entries=entries)
    assert model_params(vqf, "qwen3-0.6b-q4_0") == 596_049_920
    assert model_params(vqf, None) == 596_049_920 + v * d  # a file's own q4_lm: untied


def test_json_report_schema(tmp_path, capsys):
    r, err = bench_json(capsys, tmp_path)
    assert "generated" in err
    assert r["schema"] == SCHEMA == "weightfile.bench/3"
    assert set(r) == {
        "schema", "build", "timestamp", "machine", "model", "profile", "fast_engine", "repetitions",
        "open_seconds", "checksum_bytes_per_s", "checksum_bytes_hashed", "dequantize",
        "memory_bandwidth", "matvec", "tests", "decode_speedup", "roofline", "peak_rss",
        "notes",
    }  # fmt: skip
    assert set(r["build"]) == {"version", "commit"}
    assert r["build"]["commit"] is None or re.fullmatch(r"[0-9a-f]{12}", r["build"]["commit"])
    stamp = datetime.strptime(r["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
    assert abs((datetime.utcnow() - stamp).total_seconds()) < 600
    assert r["model"]["synthetic"] == "tiny-q4_0" and r["model"]["family"] == "q4"
    assert r["model"]["geometry"]["hidden"] == 64
    assert r["model"]["params"] == tiny_params() == 90_496
    assert r["fast_engine"] is FAST and r["repetitions"] == 1
    assert r["profile"] == "canonical" and {t["profile"] for t in r["tests"]} == {"canonical"}
    for key in ("open_seconds", "checksum_bytes_per_s"):
        assert r[key] > 0
    assert r["dequantize"]["tensor"] == "q4_gate" and r["dequantize"]["bytes_per_s"] > 0
    bw = r["memory_bandwidth"]
    assert bw["threads"] == os.cpu_count()
    assert set(bw["by_threads"]) == {"1", "2", str(os.cpu_count())}
    assert bw["by_threads"]["1"] == bw["single_core_bytes_per_s"]
    with open_vqf(r["model"]["path"]) as vqf:  # every covered byte (spec/vqf.md §fnv-trailer)
        covered = len(vqf.directory_bytes()) + len(vqf.data_region())
    assert r["checksum_bytes_hashed"] == (
        covered if library() is not None else min(covered, 1 << 20)
    )
    roof = r["roofline"]
    assert roof["weight_bytes_per_token"] == PER_TOKEN
    single = bw["single_core_bytes_per_s"]
    assert roof["single_core_tokens_per_s"] == pytest.approx(single / PER_TOKEN)
    ref = r["tests"][0]
    assert (ref["engine"], ref["method"], ref["test"]) == ("ref", "measured", "tg2")
    assert ref["avg_tokens_per_s"] > 0 and ref["stddev_tokens_per_s"] is None  # one sample
    rss = r["peak_rss"]
    assert rss["engine"] == ("fast" if FAST else "ref")
    assert rss["peak_rss_bytes"] >= rss["baseline_rss_bytes"] > 0
    assert rss["bound"]["file_bytes"] == r["model"]["file_bytes"]
    # a 0.1 MB model's bound is far below the interpreter's noise: no verdict, and a note says so
    assert rss["within_bound"] is None and any("no verdict" in n for n in r["notes"])


def test_lists_give_one_row_per_thread_count_and_test(shared, capsys):
    """-t/-p/-n lists (llama-bench's commas, repeated flags or spaces) give every pp, then every
    tg test per thread count; t/s is the mean ± sample stddev of -r samples."""
    quick = ["--bandwidth-mib", "8", "-t", "1,2", "-p", "2", "-p", "3", "-n", "2", "-r", "3"]
    r, _ = bench_json(capsys, shared, "--no-rss", "--no-ref", quick=quick)
    if not FAST:
        assert r["tests"] == [] and r["decode_speedup"] is None
        return
    got = [(t["engine"], t["threads"], t["test"], t["n_prompt"], t["n_gen"]) for t in r["tests"]]
    assert got == [(e, n, *t) for e in ["fast"] for n in (1, 2)
                   for t in (("pp2", 2, 0), ("pp3", 3, 0), ("tg2", 0, 2))]  # fmt: skip
    by_threads = r["memory_bandwidth"]["by_threads"]
    for t in r["tests"]:
        samples = t["samples_tokens_per_s"]
        assert t["repetitions"] == len(samples) == 3 and all(v > 0 for v in samples)
        assert t["avg_tokens_per_s"] == pytest.approx(statistics.mean(samples))
        assert t["stddev_tokens_per_s"] == pytest.approx(statistics.stdev(samples))
        if t["n_gen"]:
            want = by_threads[str(t["threads"])] / PER_TOKEN
            assert t["roofline_tokens_per_s"] == pytest.approx(want)
            assert t["roofline_fraction"] == pytest.approx(t["avg_tokens_per_s"] / want)
        else:
            assert t["roofline_tokens_per_s"] is None and t["roofline_fraction"] is None
    assert r["decode_speedup"] is None  # --no-ref


@pytest.mark.parametrize(
    "flags", [["-t", "1,2,4"], ["-t", "1", "-t", "2,4"], ["--threads", "1", "2", "4"]]
)
def test_thread_lists_parse_the_same_in_every_spelling(flags):
    args = build_parser().parse_args(["bench", "x.vqf", *flags, "-p", "64,512", "-n", "0"])
    assert (args.threads, args.n_prompt, args.n_gen) == ([1, 2, 4], [64, 512], [0])


def test_csv_and_jsonl_rows(shared, capsys):
    from weightfile.bench.table import ROW_FIELDS

    out, _ = bench_out(capsys, shared, "--no-rss", "-o", "jsonl")
    lines = [json.loads(line) for line in out.splitlines()]
    want = [("ref", 1, "tg2")] + [("fast", n, t) for n in (1, 2) for t in ("pp2", "tg2")] * FAST
    assert [(x["engine"], x["n_threads"], x["test"]) for x in lines] == want
    assert all(x["schema"] == SCHEMA for x in lines)
    assert [set(x) - {"schema"} for x in lines] == [set(ROW_FIELDS)] * len(lines)
    assert all(isinstance(x["samples_ts"], list) for x in lines)
    out, _ = bench_out(capsys, shared, "--no-rss", "-o", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(ROW_FIELDS)
    assert [(x["engine"], int(x["n_threads"]), x["test"]) for x in rows] == want
    for x in rows:
        samples = [float(v) for v in x["samples_ts"].split(";")]
        assert float(x["avg_ts"]) == pytest.approx(statistics.mean(samples))
        assert x["model"] == "tiny-q4_0" and int(x["model_n_params"]) == 90_496
        assert int(x["model_size"]) == os.path.getsize(x["model_path"])
        assert (x["roofline_ts"] == "") == (x["test"].startswith("pp"))
        assert x["stddev_ts"] == ""  # -r 1: one sample, no stddev


def test_md_output_is_llama_bench_table_then_summary(shared, capsys):
    out, err = bench_out(capsys, shared, "--no-rss")
    lines = out.splitlines()
    assert re.fullmatch(r"\| model +\| +size \| +params \| engine +\| threads \| test \| .*"
                        r"\| roofline t/s \| of roofline \|", lines[0])  # fmt: skip
    assert set(lines[1]) <= set("|-:")
    n_rows = 1 + (2 * 2 if FAST else 0)  # ref tg2; fast pp2 and tg2 at 1 and 2 threads
    table = lines[2 : 2 + n_rows]
    assert all(line.startswith("| tiny-q4_0 ") for line in table) and lines[2 + n_rows] == ""
    assert "| measurement" in lines[3 + n_rows]
    for label in ("machine", "open_vqf", "checksum", "memory read bandwidth",
                  "decode tokens/s, ref tg2", "decode roofline tokens/s"):  # fmt: skip
        assert label in out
    assert re.fullmatch(r"build: \S+ \(.+\) · \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", lines[-1])
    assert ("n/a (no fast engine)" in out) is not FAST
    assert "target" not in out and "NOT met" not in out  # development goals: benchmarks/targets.py
    assert "\r" not in err  # no progress bar: stderr is not a terminal


BAD = [
    (["-t", "0"], "-t/--threads: must be at least 1, got 0"),
    (["-t", "1,x"], "-t/--threads: expected integers separated by commas"),
    (["-p", "-1"], "-p/--n-prompt: must be at least 0, got -1"),
    (["-n", "abc"], "-n/--n-gen: expected integers"),
    (["-r", "0"], "-r/--repetitions: must be at least 1"),
    (["-o", "xml"], "invalid choice: 'xml'"),
    (["--bandwidth-mib", "0"], "--bandwidth-mib: must be at least 1"),
    (["--json", "-o", "csv"], "--json is -o json"),
    (["-p", "0", "-n", "0"], "no test to run"),
    (["--tokens", "2", "-n", "2"], "give either --tokens or -p/-n"),
    (["-d", "-1"], "-d/--n-depth: must be at least 0, got -1"),
    (["-d", "0,x"], "-d/--n-depth: expected integers separated by commas"),
]


@pytest.mark.parametrize(("flags", "says"), BAD)
def test_bad_values_are_a_one_line_usage_error(tmp_path, capsys, flags, says):
    argv = ["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(tmp_path), *flags]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err, err
    assert not list(tmp_path.iterdir())  # refused before generating or measuring anything


def test_plot_draws_a_png(tmp_path, shared, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "bench.png"
    bench_out(capsys, shared, "--no-rss", "--no-ref", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_plot_without_matplotlib_is_one_line_before_running(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    argv = ["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(tmp_path), "--plot", "x.png"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'weightfile[plot]'" in err
    assert not list(tmp_path.iterdir())


def test_second_run_reuses_the_cache(tmp_path, capsys):
    bench_json(capsys, tmp_path, "--no-rss", "--no-ref")
    files = sorted(p.name for p in tmp_path.iterdir())
    _, err = bench_json(capsys, tmp_path, "--no-rss", "--no-ref")
    assert "generated" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == files == [files[0]]


def test_model_path_and_errors(tmp_path, shared, capsys):
    bench_json(capsys, shared, "--no-rss", "--no-ref")
    (model,) = shared.glob("tiny-q4_0-*.vqf")
    assert main(["bench", str(model), "--no-rss", "--no-ref", *QUICK]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith(f"| {model.name} ")  # by its name
    assert main(["bench", "--synthetic", "nope", "--cache-dir", str(tmp_path)]) == 2  # usage
    assert "bench.synthetic.name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # a bad number is argparse's one-line error
        main(["bench", str(model), "--tokens", "0"])
    assert usage.value.code == 2
    assert main(["bench", str(tmp_path / "missing.vqf"), "--no-rss", *QUICK]) == 4  # cannot read


def test_an_encrypted_model_is_benched_with_its_passphrase(tmp_path, capsys, monkeypatch):
    """--passphrase-file (else VLLM_VQF_KEY) opens an ENC model; the child gets the key through
    its environment; without a key the run stops before measuring (spec/vqf.md §sm4-hmac)."""
    monkeypatch.delenv("VLLM_VQF_KEY", raising=False)
    cache = tmp_path / "cache"
    plain_report, _ = bench_json(capsys, cache, "--no-rss", "--no-ref")
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
    assert r["tests"][0]["engine"] == "ref" and r["tests"][0]["avg_tokens_per_s"] > 0
    assert r["peak_rss"]["peak_rss_bytes"] >= r["peak_rss"]["baseline_rss_bytes"] > 0  # the child
    assert any("encrypted model" in n for n in r["notes"])
    monkeypatch.setenv("VLLM_VQF_KEY", "bench secret")
    assert main(["bench", str(enc), "--json", "--no-rss", "--no-ref", *QUICK]) == 0
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


def test_fast_rows_are_reported_when_an_engine_exists(shared, capsys, monkeypatch):
    # a stand-in engine (the reference model, a NumPy matvec) exercises the report's fast
    # plumbing whether or not this machine has the C kernels
    from weightfile.bench import engines

    open_model = lambda vqf, threads=1: engines.open_ref(vqf)  # noqa: E731
    monkeypatch.setattr(engines, "fast_open_model", lambda: open_model)
    monkeypatch.setattr(engines, "fast_matrix_from_entry", lambda: StandInMatrix)
    r, _ = bench_json(capsys, shared, "--no-rss")
    assert r["fast_engine"] is True and r["notes"] == []
    ref, *fast = r["tests"]
    assert [(f["engine"], f["threads"], f["test"], f["method"]) for f in fast] == [
        ("fast", 1, "pp2", "measured"),
        ("fast", 1, "tg2", "measured"),
        ("fast", 2, "pp2", "measured"),
        ("fast", 2, "tg2", "measured"),
    ]
    for f in fast[1::2]:
        want = f["avg_tokens_per_s"] / ref["avg_tokens_per_s"]
        assert r["decode_speedup"][str(f["threads"])] == pytest.approx(want)
    assert set(r["decode_speedup"]) == {"1", "2"}
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


@pytest.mark.parametrize(
    "flags",
    [["-d", "0,256,1024"], ["-d", "0", "--n-depth", "256,1024"], ["-d", "0", "256", "1024"]],
)
def test_depth_lists_parse_as_llama_bench_d(flags):
    args = build_parser().parse_args(["bench", "x.vqf", *flags])
    assert args.n_depth == [0, 256, 1024]
    assert build_parser().parse_args(["bench", "x.vqf"]).n_depth is None  # default: depth 0


def test_depth_rows_carry_n_depth_in_jsonl_csv_and_md(shared, capsys):
    """-d 0,3: every test at depth 0 then at depth 3 per thread count, as llama-bench orders its
    instances; the depth-3 rows are named `pp2 @ d3`, the ref row stays at depth 0."""
    quick = ["--bandwidth-mib", "8", "-p", "2", "-n", "2", "-r", "1", "-t", "1", "-d", "0,3"]
    out, _ = bench_out(capsys, shared, "--no-rss", "-o", "jsonl", quick=quick)
    got = [(x["engine"], x["test"], x["n_prompt"], x["n_gen"], x["n_depth"])
           for x in map(json.loads, out.splitlines())]  # fmt: skip
    fast = [("fast", "pp2", 2, 0, 0), ("fast", "tg2", 0, 2, 0),
            ("fast", "pp2 @ d3", 2, 0, 3), ("fast", "tg2 @ d3", 0, 2, 3)]  # fmt: skip
    assert got == [("ref", "tg2", 0, 2, 0)] + fast * FAST
    out, _ = bench_out(capsys, shared, "--no-rss", "-o", "csv", quick=quick)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(x["test"], int(x["n_depth"])) for x in rows] == [(g[1], g[4]) for g in got]
    out, _ = bench_out(capsys, shared, "--no-rss", quick=quick)
    tests = [line.split("|")[6].strip() for line in out.splitlines()[2 : 2 + len(got)]]
    assert tests == [g[1] for g in got]
    assert "ref: depth 0 only" in out


def test_depth_only_rows_leave_no_decode_speedup(shared, capsys):
    if not FAST:
        pytest.skip("the fast rows need the C kernels")
    quick = ["--bandwidth-mib", "8", "-p", "0", "-n", "2", "-r", "1", "-t", "1", "-d", "4"]
    r, _ = bench_json(capsys, shared, "--no-rss", quick=quick)
    assert [(t["engine"], t["n_depth"]) for t in r["tests"]] == [("ref", 0), ("fast", 4)]
    assert r["decode_speedup"] is None  # the ref's depth-0 row has no fast depth-0 peer
    assert any(n.startswith("ref: depth 0 only") for n in r["notes"])


def test_a_ninfer_depth_past_its_context_is_refused(tmp_path, capsys):
    from weightfile.bench.synthetic import spec_named

    limit = spec_named("tiny-qwen35-q8_g32_fp16").max_seq_len
    argv = ["bench", "--synthetic", "tiny-qwen35-q8_g32_fp16", "--cache-dir", str(tmp_path),
            "-q", "-p", "0", "-n", "4", "-d", str(limit - 3)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (f"-d/--n-depth {limit - 3}: with the 4-token test it needs {limit + 1} positions, but "
            f"the model's context is {limit} tokens (max_position_embeddings)") in err  # fmt: skip


def test_depth_with_mtp_is_refused_before_the_work(capsys):
    assert main(["bench", "--mtp", "2", "-d", "0,8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-d/--n-depth applies to the pp/tg tests, not to --mtp" in err
