"""The Qwen3-MoE forward of the kestrel-board profile on the C kernels (spec/numerics.md
§board-moe-model).

`FastBoardMoeModel` is the fast dense board model (`fast.qwen3.board.model.FastBoardModel`:
the C products, norms, attention and cache) with the reference board MoE model's refusals and
layer logic, its FFN on `ops.moe_ffn` (fast/csrc/board_moe.c) over each layer's stacked words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from weightfile.fast.qwen3.board import ops as dense_ops
from weightfile.fast.qwen3.board.model import FastBoardModel, fast_matrix_words
from weightfile.ref.qwen3.board.model import Record
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf, moe_plan
from weightfile.ref.qwen3_moe.board.ffn import MoeExpert, MoeStep
from weightfile.ref.qwen3_moe.board.model import BoardMoeModel
from weightfile.ref.qwen3_moe.weights import MoeLayerWeights
from weightfile.ref.vqf.read import VQFFile

from . import ops


@dataclass(frozen=True)
class FastBoardMoeModel(BoardMoeModel, FastBoardModel):
    """BoardMoeModel on the C kernels; threads splits products over rows."""

    stacked: tuple[ops.StackedLayer, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        BoardMoeModel.__post_init__(self)
        layers = tuple(
            ops.stack(lw.router.values, tuple(MoeExpert(e.gate, e.up, e.down) for e in lw.experts))
            for lw in self.weights.layers
        )
        object.__setattr__(self, "stacked", layers)

    def moe_step(self, lw: MoeLayerWeights, n: np.ndarray) -> MoeStep:
        """spec/numerics.md §board-moe the C Q8 MoE FFN of one token."""
        i = next(i for i, w in enumerate(self.weights.layers) if w is lw)
        layer = self.stacked[i]
        return ops.moe_ffn(layer, self.config.num_experts_per_tok, n, self.threads)

    def mlp_part(  # type: ignore[override]
        self, lw: MoeLayerWeights, h: np.ndarray, phase: str, form: str, rec: Record
    ) -> np.ndarray:
        """spec/numerics.md §board-moe-model as the reference's, on the C norms and FFN."""
        norm = dense_ops.rmsnorm_tree8 if phase == "decode" else dense_ops.rmsnorm_sequential
        n = norm(h, lw.ffn_norm, self.config.eps_f32)
        s = self.moe_step(lw, n)
        out = h + s.out
        rec("ffn_norm", n)
        for name, value in (("router_logits", s.logits), ("experts", s.experts)):
            rec("moe." + name, value)
        for name, value in (("weights", s.weights), ("out", s.out)):
            rec("moe." + name, value)
        rec("ffn_residual", out)
        return out


def bind_board_moe_fast(vqf: VQFFile, threads: int = 1) -> FastBoardMoeModel:
    """A Qwen3-MoE VQF bound for the fast kestrel-board engine (spec/numerics.md
    §board-moe-model)."""
    ops.lib()  # refuse early: no C kernels, or a libm that is not the board's
    plan = moe_plan(vqf)
    config, weights = bind_vqf(vqf, fast_matrix_words)
    return FastBoardMoeModel(config, weights, plan.projection_set, threads)  # type: ignore[arg-type]
