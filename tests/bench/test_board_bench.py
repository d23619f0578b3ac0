"""`weightfile bench --profile kestrel-board` (issue 31): the board's fast rows beside the
canonical ones in one report — its pp/tg tests and, on a Qwen3-VL file, its vision tower's
encode of the bench image — and the profile's typed refusals. No timing is asserted: these
check what the report carries."""

import json
from pathlib import Path

import pytest

from weightfile.bench import engines, measure, report
from weightfile.cli import main

PACK = Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2" / "vl-a-q8_0-img64x96"
pytestmark = pytest.mark.skipif(
    engines.fast_open_model() is None, reason="the board rows time the fast engine (C kernels)"
)


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(measure, "MIN_SECONDS", 0.0)  # these check the report, not the machine
    monkeypatch.setattr(measure, "REPEATS", 1)
    monkeypatch.setattr(report, "BW_REPEATS", 1)


def bench(*extra: str) -> list[str]:
    return ["bench", *extra, "-p", "3", "-n", "2", "-r", "1", "-t", "1", "--bandwidth-mib", "8",
            "--no-rss", "--no-ref", "--quiet"]  # fmt: skip


def test_the_board_rows_sit_beside_the_canonical_rows(quick, capsys):
    # the published pack's VISION file: text head_dim 32, a tower with DeepStack [0, 2]
    assert main(bench(str(PACK / "model.vqf"), "--profile", "kestrel-board", "--json")) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["profile"] == "kestrel-board"
    tests = {(t["profile"], t["test"]) for t in r["tests"]}
    assert tests == {(p, t) for p in ("canonical", "kestrel-board") for t in ("pp3", "tg2")}
    assert all(t["engine"] == "fast" and t["avg_tokens_per_s"] > 0 for t in r["tests"])
    assert set(r["board_decode_ratio"]) == {"1"} and r["board_decode_ratio"]["1"] > 0
    im = r["image_encode"]
    by_profile = {row["profile"]: row for row in im["rows"]}
    assert set(by_profile) == {"canonical", "kestrel-board"}
    board = by_profile["kestrel-board"]
    assert (board["engine"], board["threads"], board["method"]) == ("fast", 1, "measured")
    assert board["seconds"] > 0 and board["gflop_per_s"] > 0
    # by hand (spec/numerics.md §board-vision-preprocess): the 8×8 position table caps the grid
    # at 64 patches, so 448×448 (28×28 patches) shrinks by sqrt(64/784) to 128×128: 8×8
    # patches, 4×4 = 16 merged tokens
    assert board_image(im) == ([128, 128], [1, 8, 8], 64, 16)
    assert set(im["board"]["encode_ratio"]) == {"1"}


def board_image(im: dict) -> tuple:
    i = im["board"]["image"]
    return i["pixels_hw"], i["grid"], i["patches"], i["tokens"]


def test_the_table_names_the_board_rows(quick, capsys):
    assert main(bench(str(PACK / "model.vqf"), "--profile", "kestrel-board", "-o", "md")) == 0
    out = capsys.readouterr().out
    assert "| fast kestrel-board " in out  # the pp/tg rows' engine column
    assert "fast kestrel-board ×1" in out  # the board tower's encode row
    assert "decode t/s, kestrel-board ÷ canonical fast" in out


def test_canonical_reports_keep_their_rows(quick, capsys):
    assert main(bench(str(PACK / "model.vqf"), "--json")) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["profile"] == "canonical" and "board_decode_ratio" not in r
    assert {t["profile"] for t in r["tests"]} == {"canonical"}
    assert "board" not in r["image_encode"]
    assert "kestrel-board" not in {row.get("profile") for row in r["image_encode"]["rows"]}


def test_a_geometry_the_board_does_not_cover_is_refused_by_rule(quick, tmp_path, capsys):
    # tiny-q8_0's head_dim is 16: the board's decode attention takes multiples of 32
    args = bench("--synthetic", "tiny-q8_0", "--cache-dir", str(tmp_path), "--json",
                 "--profile", "kestrel-board")  # fmt: skip
    assert main(args) != 0
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before any report
    assert "vqf.bind.unsupported" in captured.err and "head_dim" in captured.err
