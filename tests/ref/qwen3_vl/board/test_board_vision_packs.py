"""The board model of the Qwen3-VL vision tower reproduces the engine's own image path bit for
bit (spec/numerics.md §board-vision).

The oracle is tests/data/kestrel-board-v2/: two packs whose `engine.npz` the Kestrel engine's
vision code computed (built for aarch64, run under qemu; README.md there) from `image.npy` and
`model.vqf`. Nothing in them comes from weightfile's arithmetic. Comparisons are of uint32 bit
patterns (int32 for the geometry), never of floats with a tolerance.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.qwen3_vl.board.preprocess import board_pixels, target_size
from weightfile.ref.qwen3_vl.board.tower import BoardVisionTower
from weightfile.ref.vqf.read import open_vqf

DATA = Path(__file__).resolve().parents[3] / "data" / "kestrel-board-v2"
PACKS = ("vl-a-q8_0-img64x96", "vl-a-q8_0-img70x100")


def test_the_two_vision_packs_are_in_the_tree() -> None:
    """The oracle is test data in the repository; missing data fails, it never skips."""
    for pack in PACKS:
        for f in ("model.vqf", "case.json", "engine.npz", "image.npy"):
            assert (DATA / pack / f).is_file(), f"{pack}/{f} missing"


@cache
def tower(pack: str) -> BoardVisionTower:
    with open_vqf(DATA / pack / "model.vqf") as vqf:
        config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]))
    return BoardVisionTower(config, weights)


@cache
def computed(pack: str) -> dict[str, np.ndarray]:
    t = tower(pack)
    pixels = board_pixels(np.load(DATA / pack / "image.npy"), 16, t.config.num_position_embeddings)
    out: dict[str, np.ndarray] = {}
    t.forward(pixels, lambda name, value: out.__setitem__(name, np.asarray(value)))
    return out


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32) if a.dtype == np.float32 else a


def differences(got: dict[str, np.ndarray], want) -> list[str]:
    """Every name of `want` missing from `got`, of another shape, or not bit for bit equal."""
    wrong = []
    for name in want.files:
        g, w = got.get(name), want[name]
        if g is None or g.shape != w.shape or g.dtype != w.dtype:
            wrong.append(
                f"{name}: {None if g is None else (g.dtype, g.shape)} vs {w.dtype, w.shape}"
            )
        elif not np.array_equal(bits(g), bits(w)):
            i = int(np.flatnonzero(bits(g).ravel() != bits(w).ravel())[0])
            wrong.append(
                f"{name}[{i}]: ours {bits(g).ravel()[i]:#x}, engine {bits(w).ravel()[i]:#x}"
            )
    return wrong


@pytest.mark.parametrize("pack", PACKS)
def test_every_array_of_the_pack_bit_for_bit(pack: str) -> None:
    """All 83 arrays: pixels, patch embedding, positions, rotary table, each block's LayerNorms,
    q/k/v before and after rotary, layer 0's scores, attention, projection, residual, fc1, the
    padded GELU buffer, fc2, block output, both DeepStack mergers and the main merger; and no
    array the engine did not dump."""
    with np.load(DATA / pack / "engine.npz") as want:
        got = computed(pack)
        assert len(want.files) == 83 and set(got) == set(want.files)
        assert differences(got, want) == []


@pytest.mark.parametrize("pack", PACKS)
def test_the_engine_preprocessed_size_of_case_json(pack: str) -> None:
    """case.json's engine-preprocessed size and grid come from the engine's run, not from us."""
    case = json.loads((DATA / pack / "case.json").read_text())
    img, pre = case["image"], case["engine_preprocessed"]
    th, tw = target_size(img["height"], img["width"], 16, case["vis_geometry"]["vis_max_pos"])
    assert (th, tw) == (pre["height"], pre["width"])
    assert (th // 16, tw // 16) == (pre["grid_h"], pre["grid_w"])


def test_the_packs_exercise_the_defects() -> None:
    """Guards that the comparison can fail where the engine is wrong, from the engine's numbers
    alone: the 70x100 grid is odd (5x7: 6 tokens from 24 of 35 patches), and with vf 48 the
    GELU buffer's row p holds GELU of fc1's flat elements 64p..64p+47 (the stride defect), not of
    fc1's row p: GELU keeps the sign, so the signs tell which."""
    with np.load(DATA / PACKS[1] / "engine.npz") as z:
        assert list(z["vision.geometry_hw_grid_ntok"]) == [80, 112, 5, 7, 6]
        fc1, act = z["vit.layer0.fc1"], z["vit.layer0.gelu_padded"]
    assert fc1.shape == (35, 48) and act.shape == (35, 64) and np.all(act[:, 48:] == 0)
    flat = fc1.ravel()
    rows = range(1, len(flat) // 64)
    shifted = all(
        np.array_equal(np.sign(act[p, :48]), np.sign(flat[64 * p : 64 * p + 48])) for p in rows
    )
    own = all(np.array_equal(np.sign(act[p, :48]), np.sign(fc1[p])) for p in rows)
    assert shifted and not own
    assert np.all(act[len(flat) // 64 + 1 :] == 0)  # the last patches read only zeros


def test_target_size_hand_cases() -> None:
    """spec/numerics.md §board-vision-preprocess by hand. Within the cap the grid is rounded up
    (70x100 -> 5x7 patches). 200x200: 13x13 = 169 > 64, s = 8/13, 200·s/16 = 7.7 -> 7 patches a
    side. 160x320: 10x20 > 64, s = 0.5657, 5 x 11 patches. 10x2000: 1x125 > 64, s = 0.7155, the
    width 89 patches, the height floored to 0 and raised to 1; 89 > 64, so the width (the longer
    side) loses a patch at a time down to 64."""
    assert target_size(64, 96, 16, 64) == (64, 96)
    assert target_size(70, 100, 16, 64) == (80, 112)
    assert target_size(1, 1, 16, 64) == (16, 16)
    assert target_size(200, 200, 16, 64) == (112, 112)
    assert target_size(160, 320, 16, 64) == (80, 176)
    assert target_size(10, 2000, 16, 64) == (16, 1024)
