"""fast == ref for the whole board vision tower, by Hypothesis, on random tiny towers that reach
every defect the packs do not: head_dim 24 (the score tree's dropped products), FFN widths that
are and are not multiples of 32, odd and even grids in both directions, DeepStack at any block
(spec/numerics.md §board-vision)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast.qwen3_vl.board.tower import FastBoardVisionTower
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3_vl.board.tower import BoardVisionTower
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)

F32 = np.float32


def q8(rng: np.random.Generator, rows: int, cols: int, used: int | None = None) -> QuantMatrix:
    codes = rng.integers(-127, 128, (rows, cols)).astype(np.int8)
    if used is not None:
        codes[:, used:] = 0  # fc2's zero padding (spec/vqf.md §vision-tensors)
    scales = np.float16(rng.uniform(1e-3, 2e-2, (rows, cols // 32))).view(np.uint16)
    return QuantMatrix(codes, scales)


def vec(rng: np.random.Generator, n: int, around: float = 0.0) -> np.ndarray:
    return (rng.standard_normal(n) * 0.1 + around).astype(F32)


def dense(rng: np.random.Generator, rows: int, cols: int) -> DenseMatrix:
    return DenseMatrix((rng.standard_normal((rows, cols)) * 0.05).astype(F32))


def random_tower(seed: int, heads: int, vh: int, vf: int, ds: tuple[int, ...]):
    rng = np.random.default_rng(seed)
    c = VisionConfig(depth=2, hidden_size=vh, num_heads=heads, intermediate_size=vf,
                     out_hidden_size=32, num_position_embeddings=16,
                     deepstack_visual_indexes=ds, patch_size=4)  # fmt: skip
    vfp, mi = -(-vf // 32) * 32, 4 * vh
    blocks = tuple(
        VisionBlockWeights(vec(rng, vh, 1), vec(rng, vh), q8(rng, 3 * vh, vh), vec(rng, 3 * vh),
                           q8(rng, vh, vh), vec(rng, vh), vec(rng, vh, 1), vec(rng, vh),
                           q8(rng, vf, vh), vec(rng, vf), q8(rng, vh, vfp, vf), vec(rng, vh))
        for _ in range(2)
    )  # fmt: skip

    def merger(norm: int) -> MergerWeights:
        return MergerWeights(vec(rng, norm, 1), vec(rng, norm), dense(rng, mi, mi), vec(rng, mi),
                             dense(rng, 32, mi), vec(rng, 32))  # fmt: skip

    w = VisionWeights(dense(rng, vh, c.patch_dim), vec(rng, vh), vec(rng, 16 * vh).reshape(16, vh),
                      blocks, merger(vh), tuple(merger(mi) for _ in ds))  # fmt: skip
    return c, w


def recorded(tower: BoardVisionTower, pixels: np.ndarray) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    tower.forward(pixels, lambda n, v: out.__setitem__(n, np.asarray(v)))
    return out


@settings(max_examples=6, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([(4, 96), (1, 32), (2, 64)]),  # (heads, width): head_dim 24, 32, 32
    st.sampled_from([40, 64, 72]),
    st.sampled_from([(), (0,), (1,), (0, 1)]),
    st.integers(2, 5),
    st.integers(2, 5),
)
def test_fast_tower_equals_the_reference(seed, geometry, vf, ds, gh, gw) -> None:
    c, w = random_tower(seed, *geometry, vf, ds)
    pixels = (np.random.default_rng(seed + 1).uniform(-1, 1, (4 * gh, 4 * gw, 3))).astype(F32)
    want = recorded(BoardVisionTower(c, w), pixels)
    for threads in (1, 3):
        got = recorded(FastBoardVisionTower(c, w, threads), pixels)
        assert set(got) == set(want)
        for n, v in want.items():
            assert got[n].shape == v.shape and np.array_equal(
                got[n].view(np.uint32), v.view(np.uint32)
            ), n
