"""`weightfile replay MODEL DUMP` (spec/numerics.md §replay): each op recomputed from the dump's
own input, equal or different with diff's figures, exit 0 / 1 / 3 / 4.

The dumps are the engine's MoE packs (tests/data/kestrel-board-v2/moe-*; the vision packs are
test_replay_vision.py's) and copies of them with
one bit changed, an input replaced or arrays renamed: what replay must find is known by
construction, not by running replay.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile import replay as replay_table
from weightfile.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2"
PACK = DATA / "moe-a-q8_0-x101"
MODEL = str(PACK / "model.vqf")
BOARD = ["--profile", "kestrel-board"]


def engine_arrays(pack: Path = PACK) -> dict[str, np.ndarray]:
    with np.load(pack / "engine.npz") as z:
        return {n: z[n] for n in z.files}


def write(tmp_path: Path, arrays: dict[str, np.ndarray]) -> str:
    out = tmp_path / "dump.npz"
    np.savez(out, **arrays)
    return str(out)


@pytest.mark.parametrize("engine", ["fast", "ref"])
@pytest.mark.parametrize("pack", ["moe-a-q8_0-x101", "moe-d-q8_0-x102"])
def test_the_engine_packs_replay_equal(pack, engine, capsys):
    """Every output of the MoE op is bit-identical to the engine's: exit 0."""
    model, dump = DATA / pack / "model.vqf", DATA / pack / "engine.npz"
    argv = ["replay", str(model), str(dump), *BOARD, "--engine", engine, "--threads", "3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "op moe.ffn: equal (9 of 9 outputs bit-identical)" in out
    assert out.rstrip().endswith("result: equal")


def test_one_changed_bit_is_named_with_diffs_figures(tmp_path, capsys):
    """A gate value one ulp up: the op is different, the array and element are named."""
    z = engine_arrays()
    z["moe.gate"].view(np.uint32)[1, 2, 0, 5] += 1
    assert main(["replay", MODEL, write(tmp_path, z), *BOARD]) == 1
    out = capsys.readouterr().out
    assert "op moe.ffn: different (8 of 9 outputs bit-identical)" in out
    assert "moe.gate: 1 of 1024 differ" in out and "max 1 ulps" in out and "first [1,2,0,5]" in out


def test_replay_starts_from_the_dumps_input_not_ours(tmp_path, capsys):
    """The dump's own moe.x_in is used: with another input and the engine's outputs left as
    they were, every output differs; with the outputs dropped the op still runs and lists what
    it computed that the dump lacks."""
    z = engine_arrays()
    z["moe.x_in"] = (z["moe.x_in"] * np.float32(0.5)).astype(np.float32)
    assert main(["replay", MODEL, write(tmp_path, z), "--json", *BOARD]) == 1
    doc = json.loads(capsys.readouterr().out)
    (op,) = doc["ops"]
    differ = {a["name"] for a in op["arrays"] if a["status"] != "identical"}
    assert {"moe.router_logits", "moe.out", "moe.weights"} <= differ
    assert doc["schema"] == "weightfile.replay/1" and doc["result"] == "different"
    only = {"moe.x_in": z["moe.x_in"], "moe.out": z["moe.out"]}
    main(["replay", MODEL, write(tmp_path, only), *BOARD])
    assert "computed, not in the dump: moe.router_logits" in capsys.readouterr().out


def test_what_cannot_be_replayed_is_listed(tmp_path, capsys):
    """Outputs without their input, another profile, and arrays no op knows: listed; nothing
    replayed is exit 1 (replaying nothing proves nothing)."""
    z = engine_arrays()
    extra = {"engine.scratch": np.zeros((4, 8), np.float32), "moe.out": z["moe.out"]}
    extra["vit.layer0.ln1"] = np.zeros((4, 8), np.float32)  # a vision op, not on a MoE file
    assert main(["replay", MODEL, write(tmp_path, extra), *BOARD]) == 1
    out = capsys.readouterr().out
    assert "op moe.ffn: not replayed (input moe.x_in not in the dump)" in out
    assert "op vit.layer0.ln1: not replayed (replayed on qwen3_vl files only, not qwen3_moe)" in out
    assert "1 arrays no op replays: engine.scratch" in out and "no op could be replayed" in out
    assert main(["replay", MODEL, str(PACK / "engine.npz")]) == 1  # canonical profile
    assert "replayed under --profile kestrel-board only" in capsys.readouterr().out


def test_an_input_of_the_wrong_shape_is_a_typed_error(tmp_path, capsys):
    z = engine_arrays()
    z["moe.x_in"] = z["moe.x_in"][:, :, :32].copy()
    assert main(["replay", MODEL, write(tmp_path, z), *BOARD]) == 1
    assert "frontend.replay.input" in capsys.readouterr().err


def test_unreadable_dump_is_exit_4_and_unsupported_profile_file_is_3(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    assert main(["replay", MODEL, str(bad), *BOARD]) == 4
    assert "frontend.dump" in capsys.readouterr().err
    from weightfile.bench.synthetic import synthetic_model

    vl, _ = synthetic_model("tiny-vl-q8_0", tmp_path)
    assert main(["replay", str(vl), str(PACK / "engine.npz"), *BOARD]) == 3
    assert "vqf.bind.unsupported" in capsys.readouterr().err


def test_the_table_rows_resolve_and_cover_the_packs_moe_vocabulary():
    """Each row's function imports; the MoE row's names are exactly the packs' moe arrays."""
    for op in replay_table.ROWS:
        assert callable(replay_table.resolve(op.run)) and op.inputs and op.outputs
        assert not op.derive or callable(replay_table.resolve(op.derive))
    (moe,) = [op for op in replay_table.ROWS if op.name == "moe.ffn"]
    assert set(moe.inputs) | set(moe.outputs) == set(engine_arrays())


def test_diff_of_board_moe_traces_names_the_first_moe_op(tmp_path, capsys):
    """trace --profile kestrel-board on a MoE file records the MoE ops per layer; diff orders
    them as the layer computes them (router logits before experts, weights, output)."""
    ours = tmp_path / "ours.npz"
    argv = ["trace", MODEL, "--token-ids", "1,2,3", *BOARD, "--out", str(ours)]
    assert main(argv) == 0
    z = dict(np.load(ours))
    for name in ("prefill.last.layer1.moe.out", "prefill.last.layer1.moe.router_logits"):
        z[name] = z[name].copy()
        z[name].view(np.uint32)[0] ^= 1
    capsys.readouterr()
    assert main(["diff", str(ours), write(tmp_path, z)]) == 1
    assert "first divergence: prefill.last: layer 1 op moe.router_logits" in capsys.readouterr().out
