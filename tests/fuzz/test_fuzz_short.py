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
from fuzz.mutate import (
    load_seeds,
    mutate,
    mutate_json,
    mutate_ninfer_fields,
    mutate_vqf_fields,
    reframe,
    split_entry,
)

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


def _script(*values: int):
    """A draw that answers `values` in order (clamped to each call's range), then the low end."""
    it = iter(values)
    return lambda lo, hi: min(max(next(it, lo), lo), hi)


def test_vqf_field_edit_reaches_the_directory_and_reseals_the_trailer(tmp_path):
    """A directory-entry edit lands in the field the schema names and the FNV trailer is
    recomputed, so validate reports no `vqf.trailer.fnv` and the reader sees the new value."""
    from weightfile.ref.vqf.fnv1a64 import fnv1a64
    from weightfile.spec.vqf.header import VQFHeader, field_offset
    from weightfile.spec.vqf.tensor import VQFTensor

    seed = next(s for s in load_seeds("vqf") if s.entry == "tiny-qwen3-q4.vqf")
    data = seed.files[seed.entry]
    # where=1 (an entry), entry 2, other 0, op 2 (a numeric field), field 1 (rows),
    # value op 2 (nudge), +1, then reseal (draw 1 of 0..7)
    out = mutate_vqf_fields(data, _script(1, 2, 0, 2, 1, 2, 1, 1))
    assert len(out) == len(data) and out != data
    rows_at = 448 + 64 * 2 + 32 + 4  # directory at 448, entry 2, rows after name and qtype
    assert (
        VQFTensor.parse(out[448 + 128 : 448 + 192])["rows"]
        == int.from_bytes(data[rows_at : rows_at + 4], "little") + 1
    )
    entry = tmp_path / seed.entry
    entry.write_bytes(out)
    rules = {v.rule for v in worker_module.weightfile.validate(entry)}
    assert "vqf.trailer.fnv" not in rules and "vqf.directory.geometry" in rules

    def trailer(b: bytes) -> int:
        file_len = int.from_bytes(b[field_offset(VQFHeader, "file_len") :][:8], "little")
        return int.from_bytes(b[file_len : file_len + 8], "little")

    n = int.from_bytes(data[12:16], "little")
    start = int.from_bytes(data[field_offset(VQFHeader, "data_offset") :][:8], "little")
    end = int.from_bytes(data[field_offset(VQFHeader, "file_len") :][:8], "little")
    want = fnv1a64(out[448 : 448 + 64 * n] + out[start:end])  # the pure-Python oracle
    assert trailer(out) == want != trailer(data)
    # the same edit with the stale trailer kept (draw 0 of 0..7) keeps the seed's trailer
    assert trailer(mutate_vqf_fields(data, _script(1, 2, 0, 2, 1, 2, 1, 0))) == trailer(data)


def test_ninfer_field_edit_cross_references_an_object():
    """A binding re-pointed at another object id is one of the structured edits."""
    seed = next(s for s in load_seeds("ninfer3") if s.name.endswith("valid/single/tiny"))
    doc, _, _ = split_entry(seed.files[seed.entry])
    # where=1 (a binding), binding 1 (p.vec, sorted), op 0 (its object), id 2 (r.hello)
    out = mutate_ninfer_fields(doc, _script(1, 1, 0, 2))
    assert out["bindings"]["p.vec"] == {"object": "r.hello"}
    assert doc["bindings"]["p.vec"] == {"object": "w.bf16"}  # the seed is not edited in place
