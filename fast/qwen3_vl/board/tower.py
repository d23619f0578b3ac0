"""The board vision tower on the C kernels (spec/numerics.md §board-vision).

`FastBoardVisionTower` is the reference `BoardVisionTower` with every heavy operation swapped
for its C twin in `ops`; the order of the steps, the names and the defects' reproduction
(padded-stride buffer, merge windows) are the reference's, inherited, so the two engines cannot
drift apart there.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.board.attention import attention_scale
from weightfile.ref.qwen3_vl.board.tower import BoardVisionTower
from weightfile.ref.qwen3_vl.config import VisionConfig, VisionWeights

from . import ops


class FastBoardVisionTower(BoardVisionTower):
    """The tower with `threads` for the C kernels (the bits do not depend on it)."""

    def __init__(self, config: VisionConfig, weights: VisionWeights, threads: int = 1) -> None:
        super().__init__(config, weights)
        self.threads = threads
        ops.lib()  # refuse early: no C kernels, or a libm that is not the board's

    def layernorm(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.layernorm(x, w, b, self.eps)

    def linear(self, m: QuantMatrix, bias: np.ndarray, x: np.ndarray) -> np.ndarray:
        return ops.q8_linear(m, bias, x, self.threads)

    def attend(self, q: np.ndarray, k: np.ndarray, v: np.ndarray):
        return ops.attend(q, k, v, attention_scale(self.config.head_dim), self.threads)

    def gelu(self, x: np.ndarray) -> np.ndarray:
        return ops.gelu(x, self.threads)

    def dense(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.dense_linear(x, w, b, self.threads)

    def patch_embed(self, rows: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.patch_embed(rows, w, b, self.threads)
