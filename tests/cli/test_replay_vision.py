"""`weightfile replay` on the board vision packs (spec/numerics.md §replay, §board-vision): every
tower step recomputed from the dump's own input.

The dumps are the engine's vision packs (tests/data/kestrel-board-v2/vl-*, computed by the
engine's code under qemu) and copies with one value changed or one array removed. What replay
must say about a copy is derived from the packs' README and the spec, not from running replay:
the step vocabulary is the README's table; an fc1 value the padded-stride defect never lets GELU
read (spec/numerics.md §board-vision-ffn-stride) cannot change the GELU buffer; GELU(0) is 0.
The packs are test data: without them these tests fail, never skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile import replay as replay_table
from weightfile.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "kestrel-board-v2"
PACKS = ("vl-a-q8_0-img64x96", "vl-a-q8_0-img70x100")
PACK = DATA / PACKS[0]
MODEL = str(PACK / "model.vqf")
BOARD = ["--profile", "kestrel-board"]
DEPTH, DEEPSTACK, HEADS, TOKENS = 3, (0, 2), 2, 6  # vl-a's geometry (the packs' README)
VF, VFP = 48, 64  # vl-a's vision FFN width and fc2's padded input width

#: Each step of a block, as the README lists the arrays (scores: layer 0 only).
BLOCK = ("ln1", "qkv_headmajor", "qkv_rope_headmajor", "attn", "proj", "resid1", "ln2", "fc1",
         "gelu_padded", "fc2", "out")  # fmt: skip


def expected_ops() -> set[str]:
    """Every step the packs record, one op each, named by the README's arrays."""
    ops = {"vision.geometry", "vision.patch_embed", "vision.patch_plus_pos", "vision.rotary"}
    ops |= {f"vit.layer{i}.{s}" for i in range(DEPTH) for s in BLOCK} | {"vit.layer0.scores"}
    for d in range(len(DEEPSTACK)):
        ops |= {f"ds{d}.merged_in", f"ds{d}.norm", f"ds{d}.fc1", f"vision.deepstack{d}"}
    return ops | {"merger.merged_in", "merger.norm", "merger.fc1", "vision.merger_out"}


def engine_arrays(pack: Path = PACK) -> dict[str, np.ndarray]:
    with np.load(pack / "engine.npz") as z:
        return {n: z[n] for n in z.files}


def run_json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def saved(tmp_path: Path, arrays: dict[str, np.ndarray]) -> str:
    out = tmp_path / "dump.npz"
    np.savez(out, **arrays)
    return str(out)


def verdicts(doc: dict) -> dict[str, str]:
    return {o["op"]: o["result"] for o in doc["ops"]}


def test_the_vision_packs_are_in_the_tree() -> None:
    for pack in PACKS:
        for f in ("model.vqf", "engine.npz"):
            assert (DATA / pack / f).is_file(), f"{pack}/{f} missing"


@pytest.mark.parametrize("engine", ["fast", "ref"])
@pytest.mark.parametrize("pack", PACKS)
def test_every_vision_step_of_the_packs_replays_equal(pack, engine, capsys):
    """Each step from the engine's own input gives the engine's output bit for bit: exit 0, every
    op of the README's vocabulary replayed and equal, every array but the pixels compared, no
    array left over."""
    model, dump = DATA / pack / "model.vqf", DATA / pack / "engine.npz"
    argv = ["replay", str(model), str(dump), *BOARD, "--engine", engine, "--threads", "3"]
    code, doc = run_json(capsys, argv)
    assert code == 0 and doc["result"] == "equal"
    assert verdicts(doc) == dict.fromkeys(expected_ops(), "equal")
    compared = {a["name"] for o in doc["ops"] for a in o["arrays"]}
    assert compared == set(engine_arrays(DATA / pack)) - {"vision.pixels_hwc"}
    assert doc["unreplayable"] == [] and all(not o["not_in_dump"] for o in doc["ops"])
    (scores,) = [o for o in doc["ops"] if o["op"] == "vit.layer0.scores"]
    assert [a["name"] for a in scores["arrays"]] == [f"vit.layer0.scores.h{h}" for h in (0, 1)]


def test_an_fc1_value_the_stride_defect_drops_changes_fc1_only(tmp_path, capsys):
    """fc1 [1, 0] one ulp up: fc1's op is different at exactly that element. fc1's rows sit at
    stride 48 in a buffer GELU reads at stride 64, so flat index 48 (row 1, column 0) lands in
    padded row 0's columns 48..63, which GELU never reads: the GELU step replayed from the changed
    fc1 is equal, and so is every other op."""
    z = engine_arrays()
    z["vit.layer0.fc1"].view(np.uint32)[1, 0] += 1
    assert 1 * VF + 0 < VFP and (1 * VF + 0) % VFP >= VF  # the buffer index GELU skips
    code, doc = run_json(capsys, ["replay", MODEL, saved(tmp_path, z), *BOARD])
    assert code == 1 and doc["result"] == "different"
    assert {op for op, v in verdicts(doc).items() if v != "equal"} == {"vit.layer0.fc1"}
    (fc1,) = [o for o in doc["ops"] if o["op"] == "vit.layer0.fc1"]
    (diff,) = fc1["arrays"]
    assert diff["differ"] == 1 and diff["first"]["index"] == [1, 0] and diff["max_ulps"] == 1


def test_the_step_after_a_changed_value_runs_from_it(tmp_path, capsys):
    """fc1 [0, 0] set to 0: fc1's op is different; GELU replayed from the dump's (changed) fc1
    gives GELU(0) = 0 where the engine's buffer holds GELU of the original, so the GELU op is
    different at [0, 0] only; fc2 replayed from the dump's (unchanged) buffer stays equal."""
    z = engine_arrays()
    assert z["vit.layer0.fc1"][0, 0] != 0 and z["vit.layer0.gelu_padded"][0, 0] != 0
    z["vit.layer0.fc1"][0, 0] = 0.0
    code, doc = run_json(capsys, ["replay", MODEL, saved(tmp_path, z), *BOARD, "--engine", "ref"])
    assert code == 1
    v = verdicts(doc)
    changed = {op for op, r in v.items() if r != "equal"}
    assert changed == {"vit.layer0.fc1", "vit.layer0.gelu_padded"}
    assert v["vit.layer0.fc2"] == v["vit.layer0.out"] == v["vit.layer1.ln1"] == "equal"
    (gelu,) = [o for o in doc["ops"] if o["op"] == "vit.layer0.gelu_padded"]
    (diff,) = gelu["arrays"]
    assert diff["differ"] == 1 and diff["first"]["index"] == [0, 0] and diff["first"]["a"] == 0


def test_an_op_whose_input_is_missing_is_listed(tmp_path, capsys):
    """ln2 removed: fc1 of that block cannot be replayed and says why; rot_cos removed: every
    block's rotary step says why; a token missing from a merger's norm rows (a gap) is a
    missing input of fc1, not a shorter replay. The other ops still replay (exit 0: every
    replayed op equal)."""
    z = engine_arrays()
    for name in ("vit.layer1.ln2", "vision.rot_cos", "ds0.norm.tok3"):
        del z[name]
    assert main(["replay", MODEL, saved(tmp_path, z), *BOARD]) == 0
    out = capsys.readouterr().out
    assert "op vit.layer1.fc1: not replayed (input vit.layer1.ln2 not in the dump)" in out
    for i in range(DEPTH):
        assert f"op vit.layer{i}.qkv_rope_headmajor: not replayed (input vision.rot_cos" in out
    assert "op ds0.fc1: not replayed (input ds0.norm.tok{t} not in the dump)" in out
    assert "op vit.layer1.gelu_padded: equal" in out and "op ds1.fc1: equal" in out
    assert "op vision.rotary: equal (1 of 1 outputs" in out
    assert "computed, not in the dump: vision.rot_cos" in out


def test_a_merger_reads_the_block_the_model_names(tmp_path, capsys):
    """DeepStack merger 1 reads block 2 (vis_ds_idx [0, 2]), the main merger the last block:
    with block 1's output changed only block 1's own out op and block 2's first steps (which
    read it) differ; ds0 reads block 0 and stays equal."""
    z = engine_arrays()
    z["vit.layer1.out"] = np.ascontiguousarray(z["vit.layer1.out"][::-1])
    code, doc = run_json(capsys, ["replay", MODEL, saved(tmp_path, z), *BOARD])
    v = verdicts(doc)
    assert code == 1
    assert {op for op, r in v.items() if r != "equal"} == {
        "vit.layer1.out", "vit.layer2.ln1", "vit.layer2.resid1"
    }  # fmt: skip


def test_other_profiles_and_files_list_the_vision_ops(capsys):
    """Under the canonical profile, or on a MoE file, no vision op is replayed: each is listed."""
    dump = str(PACK / "engine.npz")
    moe = str(DATA / "moe-a-q8_0-x101" / "model.vqf")
    for argv, why in (
        (["replay", MODEL, dump], "replayed under --profile kestrel-board only"),
        (["replay", moe, dump, *BOARD], "replayed on qwen3_vl files only, not qwen3_moe"),
    ):
        code, doc = run_json(capsys, argv)
        assert code == 1 and set(verdicts(doc)) == expected_ops()
        assert {o["why_not"] for o in doc["ops"]} == {why}


def test_an_input_the_step_cannot_take_is_a_typed_error(tmp_path, capsys):
    """Block 0's output cut to half its width: block 1's LayerNorm cannot take it."""
    z = engine_arrays()
    z["vit.layer0.out"] = np.ascontiguousarray(z["vit.layer0.out"][:, :32])
    assert main(["replay", MODEL, saved(tmp_path, z), *BOARD]) == 1
    err = capsys.readouterr().err
    assert "frontend.replay.input" in err and "vit.layer1.ln1" in err and "[24, 32]" in err


def test_templates_expand_against_the_dumps_names():
    """A row with {l} is one op per block the dump records (its outputs there); a whole-name
    placeholder stays until the model derives it."""
    names = ["vit.layer7.fc1", "vit.layer12.fc1", "vit.layer3.ln1", "ds4.fc1.tok0"]
    ops = {op.name: (op, at) for op, at in replay_table.expand(names)}
    assert set(ops) == {"vit.layer7.fc1", "vit.layer12.fc1", "vit.layer3.ln1", "ds4.fc1"}
    assert ops["vit.layer12.fc1"][0].inputs == ("vit.layer12.ln2",)
    assert ops["vit.layer12.fc1"][1] == {"l": 12}
    assert ops["vit.layer3.ln1"][0].inputs == ("{x}",)
    assert ops["ds4.fc1"][0].inputs == ("ds4.norm.tok{t}",) and ops["ds4.fc1"][1] == {"d": 4}
    from weightfile.replay_ops import block_input

    assert block_input(None, {"l": 3}) == {"x": "vit.layer2.out"}
    assert block_input(None, {"l": 0}) == {"x": "vision.patch_plus_pos"}


def test_a_block_the_model_lacks_is_named(tmp_path, capsys):
    """vl-a has 3 blocks: a dump recording block 7's fc1 (from block 7's ln2) names the block."""
    z = engine_arrays()
    z["vit.layer7.ln2"], z["vit.layer7.fc1"] = z["vit.layer0.ln2"], z["vit.layer0.fc1"]
    assert main(["replay", MODEL, saved(tmp_path, z), *BOARD]) == 1
    err = capsys.readouterr().err
    assert "frontend.replay.input" in err and "vit.layer7.fc1" in err and "l = 7" in err
    assert "does not have" in err
