"""The per-test rows' arithmetic, the progress bar's terminal rule and the peak-RSS verdict."""

import io
import statistics

import pytest

from weightfile.bench import measure, progress, report
from weightfile.ref.qwen3.config import Qwen3Config


@pytest.mark.parametrize(
    "samples", [(10.0, 12.0, 14.0), (1.5, 1.5), (100.0, 1.0, 50.0, 25.0), (3.25,)]
)
def test_mean_and_sample_stddev_match_statistics(samples):
    row = measure.BenchRow("fast", 1, "tg8", 0, 8, "measured", samples)
    assert row.avg_tokens_per_s == pytest.approx(statistics.mean(samples))
    if len(samples) == 1:
        assert row.stddev_tokens_per_s is None
    else:
        assert row.stddev_tokens_per_s == pytest.approx(statistics.stdev(samples))


def test_labels_follow_llama_bench():
    assert (measure.label_of(512, 0), measure.label_of(0, 128)) == ("pp512", "tg128")
    # llama-bench's markdown names a test at a depth `tg128 @ d1024` (llama-bench.cpp, " @ d%d")
    assert (measure.label_of(0, 128, 1024), measure.label_of(64, 0, 0)) == ("tg128 @ d1024", "pp64")


class Counting:
    """A model stand-in: records each forward call's token count and its cache's length."""

    def __init__(self):
        self.calls = []

    def new_cache(self):
        return {"length": 0}

    def forward(self, ids, cache):
        self.calls.append((len(ids), cache["length"]))
        cache["length"] += len(ids)


def test_pp_is_one_call_and_tg_one_call_per_token_from_an_empty_cache():
    m = Counting()
    row = measure.run_row(m, "fast", 2, 100, 16, 0, repetitions=3)
    assert m.calls == [(16, 0)] * 4  # a whole-prompt warm-up (llama-bench's), then three
    assert (row.test, row.threads, len(row.samples)) == ("pp16", 2, 3)
    m = Counting()
    ticks = []
    row = measure.run_row(m, "fast", 1, 100, 0, 4, repetitions=2, tick=lambda: ticks.append(1))
    assert m.calls == [(1, 0)] + [(1, i) for i in range(4)] * 2
    assert row.test == "tg4" and len(ticks) == 2


def test_a_depth_is_filled_once_untimed_and_each_repetition_starts_from_a_copy():
    """-d 8: the warm-up on an empty cache, one 8-token fill, then every repetition on a cache
    already holding those 8 tokens (a copy: the fill is not re-run, nor grown by the tests)."""
    m = Counting()
    row = measure.run_row(m, "fast", 1, 100, 16, 0, repetitions=3, n_depth=8)
    assert m.calls == [(16, 0), (8, 0)] + [(16, 8)] * 3
    assert (row.test, row.n_depth, row.n_prompt) == ("pp16 @ d8", 8, 16)
    m = Counting()
    row = measure.run_row(m, "fast", 1, 100, 0, 3, repetitions=2, n_depth=8)
    assert m.calls == [(1, 0), (8, 0)] + [(1, 8 + i) for i in range(3)] * 2
    assert (row.test, row.n_depth) == ("tg3 @ d8", 8)


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress.Progress(3, enabled=True).bar is None  # piped: silent
    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    assert progress.Progress(3, enabled=False).bar is None  # --quiet
    bar = progress.Progress(3, enabled=True)
    assert bar.bar is not None
    bar.phase("fast ×1 tg8")
    bar.tick()
    bar.close()


TINY = Qwen3Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16, rope_theta=1e6,
                   rms_norm_eps=1e-6)  # fmt: skip


@pytest.mark.parametrize(
    ("file_bytes", "grew", "verdict"),
    [(1 << 20, 0, None), (64 << 20, 10 << 20, True), (64 << 20, 100 << 20, False)],
)
def test_rss_verdict_needs_a_bound_above_the_noise(monkeypatch, file_bytes, grew, verdict):
    base = 50 << 20
    got = {"engine": "fast", "baseline_rss_bytes": base, "peak_rss_bytes": base + grew}
    monkeypatch.setattr(report, "measure_peak_rss", lambda *a: got)
    row = report.peak_rss_row("m.vqf", TINY, file_bytes, [1, 2], 8, True, True)
    assert row["within_bound"] is verdict and row["threads"] == 2
    assert (row["bound_bytes"] < report.RSS_NOISE_BYTES) is (verdict is None)
