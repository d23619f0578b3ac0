"""The short fuzz campaign CI runs on every submission (issue 14 item 6): a fixed-seed,
Hypothesis-driven run of byte and JSON mutations of the corpus seeds through validate, open and
decode of every name (fast engine, every fourth input also ref, bit for bit), in a bounded worker.
It fails on any "other" outcome and prints the reproducer. The long campaign is
tools/fuzz_campaign.py.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import worker as worker_module
from fuzz.harness import Scratch, Worker, reproducer
from fuzz.mutate import load_seeds, mutate, mutate_json, reframe, split_entry

EXAMPLES = 120  # per format; about 10-25 s each on 2 shared cores


@pytest.fixture(scope="module")
def worker():
    with Worker(mem_mb=1536, timeout=30.0) as w:
        yield w


@pytest.fixture(scope="module")
def scratch():
    s = Scratch()
    yield s
    s.close()


def _campaign(fmt: str, worker: Worker, scratch: Scratch, out: Path) -> None:
    seeds = load_seeds(fmt)
    counter = {"n": 0}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def one(data: st.DataObject) -> None:
        seed = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
        files = mutate(seed, lambda lo, hi: data.draw(st.integers(lo, hi)))
        counter["n"] += 1
        entry = scratch.write(seed, files)
        r = worker.run(entry, ref=counter["n"] % 4 == 0, decode=seed.decode)
        if r.outcome == "other":
            path = reproducer(seed, files, out)
            pytest.fail(
                f"{fmt} seed {seed.name}: {r.detail}\nreproducer: {path}\n"
                f"replay: python tests/fuzz/worker.py --once {path} --ref"
            )

    one()


@pytest.mark.parametrize("fmt", ["vqf", "ninfer3"])
def test_short_campaign_has_no_other(fmt, worker, scratch, tmp_path):
    _campaign(fmt, worker, scratch, tmp_path / "repro")


def test_seeds_are_the_corpus_and_the_examples():
    vqf, ninfer = load_seeds("vqf"), load_seeds("ninfer3")
    corpus = Path(__file__).resolve().parents[2] / "conformance" / "corpus"
    assert len(vqf) == len(list(corpus.glob("vqf/**/*.vqf"))) + 1  # + the bundled example
    assert any(len(s.files) > 1 for s in ninfer)  # sharded sets come with their volumes
    assert {"examples/artifact-v3-text", "examples/artifact-v3-mixed-sharded"} <= {
        s.name for s in ninfer
    }


def test_json_edit_is_what_the_reader_sees(tmp_path, scratch):
    """A JSON edit re-frames the entry: the reader parses the new directory, not the old one."""
    seed = next(s for s in load_seeds("ninfer3") if s.name.endswith("valid/single/tiny"))
    doc, _, _ = split_entry(seed.files[seed.entry])
    doc["bindings"]["renamed.by.fuzz"] = {"object": doc["objects"][0]["id"]}
    files = dict(seed.files, **{seed.entry: reframe(seed.files[seed.entry], doc)})
    entry = scratch.write(seed, files)
    with worker_module.weightfile.open(entry) as f:
        assert "renamed.by.fuzz" in f.names()
    assert mutate_json({"a": [1]}, lambda lo, hi: lo) != {"a": [1]}


def test_classifier_calls_a_raw_exception_other(monkeypatch, tmp_path):
    seed = load_seeds("vqf")[0]
    entry = tmp_path / seed.entry
    entry.write_bytes(seed.files[seed.entry])
    assert worker_module.run_one(str(entry), True, True)[0] in ("ok", "typed")

    def boom(*a, **k):
        raise KeyError("raw")

    monkeypatch.setattr(worker_module.weightfile, "open", boom)
    outcome, detail = worker_module.run_one(str(entry), False, True)
    assert outcome == "other" and "KeyError" in detail


def test_classifier_sees_crashes_and_timeouts(tmp_path):
    seed = load_seeds("vqf")[0]
    entry = tmp_path / seed.entry
    entry.write_bytes(seed.files[seed.entry])
    with Worker(timeout=30.0) as w:
        assert w.run(entry, False, True).outcome in ("ok", "typed")
        assert w.proc is not None
        os.kill(w.proc.pid, signal.SIGSEGV)
        r = w.run(entry, False, True)
        assert (r.outcome, r.detail) == ("other", "worker died: SIGSEGV")
        w.timeout = 0.0  # no time at all: the answer cannot be there yet
        assert w.run(entry, True, True).outcome == "timeout"
        w.timeout = 30.0
        assert w.run(entry, False, True).outcome in ("ok", "typed")  # restarted after the kill
