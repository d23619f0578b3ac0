"""`weightfile bench --mtp K` (weightfile/bench/mtp.py) on a tiny geometry: the synthetic files
bind (MTP and proposal head), speculation emits plain decoding's tokens (the bench raises
otherwise), the agreeing model's drafts are accepted far more often than the random model's,
the proposal rows are distinct ids, and the table has its columns. Timings are not asserted."""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.bench import mtp
from weightfile.cli import main

TINY = dict(
    mtp.GEOMETRY, hidden_size=128, vocab_size=256, num_hidden_layers=2,
    layer_types=["linear_attention", "full_attention"], num_attention_heads=2,
    num_key_value_heads=1, linear_num_key_heads=1, linear_num_value_heads=2,
    intermediate_size=256,
)  # fmt: skip


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    monkeypatch.setattr(mtp, "GEOMETRY", TINY)
    monkeypatch.setattr(mtp, "PROPOSAL_ROWS", 64)
    return str(tmp_path)


def test_rows_of_the_random_and_agreeing_models(tiny: str) -> None:
    rows = mtp.mtp_report(3, 12, 1, 1, tiny)
    assert [(r.model, r.head, r.k) for r in rows] == [
        ("random", "full", 3), ("agreeing", "full", 3), ("agreeing", "proposal", 3),
    ]  # fmt: skip
    random_row, agreeing_row, _ = rows
    assert agreeing_row.acceptance >= 0.9 > random_row.acceptance
    assert agreeing_row.tokens_per_round > 2.5
    assert all(r.plain_tps > 0 and r.mtp_tps > 0 and r.draft_fraction > 0 for r in rows)


def test_proposal_rows_are_distinct_ids_of_the_vocabulary(tiny: str) -> None:
    text, _ = mtp.values(11, True)
    ids = mtp.frequent_ids(text, 64)
    assert ids.shape == (64,) and len(set(ids.tolist())) == 64
    assert np.all((ids >= 0) & (ids < 256))


def test_cli_prints_the_table(tiny: str, capsys) -> None:
    assert main(["bench", "--mtp", "1", "-n", "6", "-r", "1", "--cache-dir", tiny]) == 0
    out = capsys.readouterr().out
    assert "| model" in out and "speed-up" in out and out.count("\n") >= 5
    assert main(["bench", "--mtp", "6", "--cache-dir", tiny]) == 2
