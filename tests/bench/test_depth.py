"""`bench -d D` (issue 33 item 5, llama-bench's -d): each timed test runs on a cache that already
holds D untimed prompt tokens, on every family the fast engine benches. What is checked is the
cache each timed repetition ran on: its position count (a dense, MoE or VL text KV cache, a
Qwen3.5 model's KV cache, a board model's per-layer caches) is D + the test's tokens, and a
Qwen3.5 model's recurrent state is the one the fill left, not a fresh one. No timing is asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from weightfile.bench import board, engines, measure
from weightfile.bench.report import Plan
from weightfile.bench.synthetic import synthetic_model
from weightfile.ref.vqf.read import open_vqf

pytestmark = pytest.mark.skipif(
    engines.fast_open_model() is None, reason="the depth rows time the fast engine (C kernels)"
)

BOARD_PACK = (
    Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2" / "vl-a-q8_0-img64x96"
)
DEPTH = 9  # odd, and not a capacity the caches grow to: a miscount cannot land on it by doubling


class Recording:
    """A bench model stand-in around a real one: every cache a forward call ran on, in order."""

    def __init__(self, model: Any) -> None:
        self.model, self.caches = model, []

    def new_cache(self) -> Any:
        return self.model.new_cache()

    def forward(self, tokens: Any, cache: Any, logits: str | None = None) -> Any:
        if not any(c is cache for c in self.caches):
            self.caches.append(cache)
        if logits == "last":
            return engines.forward_prompt(self.model, list(tokens), cache)
        return self.model.forward(list(tokens), cache)


def positions(cache: Any) -> int:
    """Tokens a cache holds: `length` of a fast KV / Qwen3.5 cache, `n` of each board layer's."""
    if isinstance(cache, list):  # the board model: one FastKV per layer, all at the same count
        counts = {kv.n for kv in cache}
        assert len(counts) == 1, counts
        return counts.pop()
    return int(cache.length)


def run(model: Any, vocab: int, n_prompt: int, n_gen: int) -> tuple[measure.BenchRow, list[Any]]:
    rec = Recording(model)
    row = measure.run_row(rec, "fast", 1, vocab, n_prompt, n_gen, 2, n_depth=DEPTH)
    return row, rec.caches


def check_depth_rows(model: Any, vocab: int) -> list[Any]:
    """pp5 and tg3 at depth DEPTH: the warm-up's cache, the filled one, then one copy of it per
    repetition, each ending at DEPTH + the test's tokens; returns the tg test's caches."""
    row, caches = run(model, vocab, 5, 0)
    assert (row.test, row.n_depth, row.n_prompt) == (f"pp5 @ d{DEPTH}", DEPTH, 5)
    assert [positions(c) for c in caches] == [5, DEPTH, DEPTH + 5, DEPTH + 5]
    row, caches = run(model, vocab, 0, 3)
    assert (row.test, row.n_depth, row.n_gen) == (f"tg3 @ d{DEPTH}", DEPTH, 3)
    assert [positions(c) for c in caches] == [1, DEPTH, DEPTH + 3, DEPTH + 3]
    return caches


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("depth")


@pytest.mark.parametrize("name", ["tiny-q4_0", "tiny-moe-q8_0", "tiny-vl-q4_0"])
def test_vqf_depth_rows_run_on_a_cache_holding_depth_plus_test_tokens(folder, name):
    path, _ = synthetic_model(name, folder)
    with open_vqf(path) as vqf:
        model = engines.open_fast(vqf, 1)
        check_depth_rows(model, int(vqf.header.arch["vocab_size"]))


def test_board_depth_rows_run_on_a_cache_holding_depth_plus_test_tokens():
    # the published board pack's VISION file (text head_dim 32: the board's kernels take it)
    with open_vqf(BOARD_PACK / "model.vqf") as vqf:
        bound = board.bind_text(vqf, board.profile_for(vqf, "kestrel-board"))
        check_depth_rows(board.BoardForward(bound.model), int(vqf.header.arch["vocab_size"]))


def test_qwen35_depth_rows_carry_the_fill_in_kv_cache_and_recurrent_state(folder):
    from weightfile.fast.qwen35 import open_model
    from weightfile.ref.ninfer3.read import open_artifact

    path, _ = synthetic_model("tiny-qwen35-q8_g32_fp16", folder)
    with open_artifact(path) as nf:
        model = open_model(nf, threads=1)
        vocab = model.config.vocab_size
        caches = check_depth_rows(model, vocab)
        # the same three timed tokens on an empty cache leave another recurrent state: the
        # timed repetitions started from the fill's
        fresh = model.new_cache()
        for t in measure.token_ids(vocab, 3, seed=8):
            model.forward([t], fresh)
        timed = caches[2]
        gdn = [i for i, full in enumerate(timed.attention) if not full]
        assert gdn and any(not np.array_equal(timed.recurrent[i], fresh.recurrent[i]) for i in gdn)
        assert np.array_equal(caches[1].keys[timed.attention.index(True)][:DEPTH],
                              timed.keys[timed.attention.index(True)][:DEPTH])  # fmt: skip


def test_plan_runs_every_test_at_each_depth_in_llama_bench_order():
    plan = Plan([1], [4, 8], [2], repetitions=3, depths=[0, 16])
    assert plan.runs == [(4, 0, 0), (8, 0, 0), (0, 2, 0), (4, 0, 16), (8, 0, 16), (0, 2, 16)]
    assert plan.timed_runs == 6 * 3
    assert Plan([1, 2], [4], [2]).runs == [(4, 0, 0), (0, 2, 0)]  # default: depth 0 only


class FirstCapacity(Recording):
    """Recording that also keeps each cache's capacity at the first forward call it ran on."""

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.capacities: list[int] = []

    def forward(self, tokens: Any, cache: Any, logits: str | None = None) -> Any:
        if not any(c is cache for c in self.caches):
            if hasattr(cache, "capacity"):  # a dense fast KV cache
                self.capacities.append(cache.capacity)
            else:  # Qwen3.5: [capacity, kv] per full-attention layer, [0, kv] per GDN layer
                self.capacities.append(min(k.shape[0] for k in cache.keys if k.shape[0]))
        return super().forward(tokens, cache, logits)


@pytest.mark.parametrize("name", ["tiny-q4_0", "tiny-qwen35-q8_g32_fp16"])
def test_timed_repetitions_never_grow_the_cache(folder, name):
    # llama.cpp sizes its context before timing; a depth of 62 fills a doubling cache to 64 rows
    # exactly, so a timed tg3 that had to grow it would start at 64 < 65
    from weightfile.fast.qwen35 import open_model
    from weightfile.ref.ninfer3.read import open_artifact

    path, _ = synthetic_model(name, folder)
    if name.startswith("tiny-qwen35"):
        with open_artifact(path) as nf:
            model = open_model(nf, threads=1)
            rec = FirstCapacity(model)
            measure.run_row(rec, "fast", 1, model.config.vocab_size, 0, 3, 2, n_depth=62)
    else:
        with open_vqf(path) as vqf:
            rec = FirstCapacity(engines.open_fast(vqf, 1))
            measure.run_row(rec, "fast", 1, int(vqf.header.arch["vocab_size"]), 0, 3, 2,
                            n_depth=62)  # fmt: skip
    _warm, _fill, *timed = rec.capacities
    assert len(timed) == 2 and all(cap >= 62 + 3 for cap in timed), rec.capacities
