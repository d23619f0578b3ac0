"""The fast board vision tower (fast/csrc/board_vision.c) reproduces the engine's image path bit
for bit, at 1 and 3 threads (spec/numerics.md §board-vision).

The oracle is tests/data/kestrel-board-v2/ (the engine's `engine.npz` of each VL pack, computed by
the Kestrel engine's own code under qemu; nothing in it comes from weightfile). Comparisons are
of uint32 bit patterns, never with a tolerance. With 24 and 35 patches and the pool's chunks of 8
rows, 3 threads really split every patch-wise and query-wise kernel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from weightfile.fast.qwen3_vl.board.tower import FastBoardVisionTower
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.qwen3_vl.board.preprocess import board_pixels
from weightfile.ref.vqf.read import open_vqf

DATA = Path(__file__).resolve().parents[4] / "tests" / "data" / "kestrel-board-v2"
PACKS = ("vl-a-q8_0-img64x96", "vl-a-q8_0-img70x100")


def test_the_vision_packs_are_here() -> None:
    """Missing oracle data fails, never skips."""
    for pack in PACKS:
        assert (DATA / pack / "engine.npz").is_file() and (DATA / pack / "model.vqf").is_file()


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("pack", PACKS)
def test_every_array_bit_for_bit(pack: str, threads: int) -> None:
    with open_vqf(DATA / pack / "model.vqf") as vqf:
        config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]))
    tower = FastBoardVisionTower(config, weights, threads)
    pixels = board_pixels(np.load(DATA / pack / "image.npy"), 16, config.num_position_embeddings)
    got: dict[str, np.ndarray] = {}
    tower.forward(pixels, lambda name, value: got.__setitem__(name, np.asarray(value)))
    with np.load(DATA / pack / "engine.npz") as want:
        assert set(got) == set(want.files)
        wrong = [
            n
            for n in want.files
            if got[n].shape != want[n].shape
            or not np.array_equal(got[n].view(np.uint32), want[n].view(np.uint32))
        ]
    assert wrong == []
