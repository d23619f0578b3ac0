"""The Qwen3-MoE forward pass under the kestrel-board profile (spec/numerics.md §board-moe-model).

The dense board model (`ref.qwen3.board.model.BoardModel`: embedding, norms, Q/K/V/O products,
attention, KV cache, both prompt paths, lm_head, greedy decode) with every layer's FFN replaced
by the engine's Q8 MoE FFN (`ffn.moe_ffn`) on the FFN norm's output, then the residual as one
float32 add. The MoE FFN itself is proven by the packs (tests/data/kestrel-board-v2); how the
engine's text path feeds it (the norm's order per phase, one token at a time in prefill) follows
the dense path and is assumed, not proven: the packs have no MoE logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board.model import (
    HEAD_DIM_MAX,
    HEAD_DIM_MULTIPLE,
    BoardModel,
    Record,
    head_kind,
)
from weightfile.ref.qwen3.board.norm import rmsnorm_sequential, rmsnorm_tree8
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf, moe_plan
from weightfile.ref.qwen3_moe.config import Qwen3MoeConfig
from weightfile.ref.qwen3_moe.weights import MoeLayerWeights, MoeModelWeights
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import UnsupportedError

from .ffn import MoeExpert, MoeStep, moe_ffn


def board_moe_limit(config: Qwen3MoeConfig, weights: MoeModelWeights, qtype: str) -> str | None:
    """spec/numerics.md §board-moe-model what the board MoE model cannot run, as the refusal's
    words naming the limit and the file's value, or None: Q8_0 projections and experts (the
    packs' kernels; the Q4 experts' kernels were read, not run), an untied Q8_0 lm_head, and the
    dense path's head_dim limits."""
    c = config
    lw = weights.layers
    matrices = [m for w in lw for m in (w.q_proj, w.experts[0].down)]
    if qtype != "q8" or not all(isinstance(m, QuantMatrix) for m in matrices):
        return (
            "Q8_0 projections and experts (the Q8 MoE FFN is the one the packs prove; this "
            f"file's projection set is {qtype})"
        )
    if not isinstance(weights.lm_head, QuantMatrix):
        return f"an untied Q8_0 lm_head (this file's lm_head is {head_kind(weights.lm_head)})"
    if c.head_dim % HEAD_DIM_MULTIPLE or c.head_dim > HEAD_DIM_MAX:
        return (
            f"head_dim a multiple of {HEAD_DIM_MULTIPLE} and at most {HEAD_DIM_MAX} "
            f"(decode attention; this file's head_dim is {c.head_dim})"
        )
    return None


@dataclass(frozen=True)
class BoardMoeModel(BoardModel):
    """A Qwen3-MoE decoder under the kestrel-board profile (qtype "q8")."""

    config: Qwen3MoeConfig
    weights: MoeModelWeights  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Refuse what the board MoE model cannot run (spec/numerics.md §board-moe-model)."""
        why = board_moe_limit(self.config, self.weights, self.qtype)
        if why is not None:
            raise UnsupportedError(
                "vqf.bind.unsupported", f"the kestrel-board profile needs {why}", path="arch"
            )

    def moe_step(self, lw: MoeLayerWeights, n: np.ndarray) -> MoeStep:
        """spec/numerics.md §board-moe the engine's Q8 MoE FFN of one token."""
        experts = tuple(MoeExpert(e.gate, e.up, e.down) for e in lw.experts)
        return moe_ffn(lw.router.values, experts, self.config.num_experts_per_tok, n)

    def mlp_part(  # type: ignore[override]
        self, lw: MoeLayerWeights, h: np.ndarray, phase: str, form: str, rec: Record
    ) -> np.ndarray:
        """spec/numerics.md §board-moe-model h + MoE(n), n the FFN norm of h (tree8 in decode,
        sequential in prefill, as the dense path)."""
        norm = rmsnorm_tree8 if phase == "decode" else rmsnorm_sequential
        n = norm(h, lw.ffn_norm, self.config.eps_f32)
        s = self.moe_step(lw, n)
        out = h + s.out  # the caller's residual: one rounding
        rec("ffn_norm", n)
        for name, value in (("router_logits", s.logits), ("experts", s.experts)):
            rec("moe." + name, value)
        for name, value in (("weights", s.weights), ("out", s.out)):
            rec("moe." + name, value)
        rec("ffn_residual", out)
        return out


def bind_board_moe(vqf: VQFFile) -> BoardMoeModel:
    """A Qwen3-MoE VQF bound for the kestrel-board profile (spec/numerics.md §board-moe-model)."""
    plan = moe_plan(vqf)
    config, weights = bind_vqf(vqf)
    return BoardMoeModel(config, weights, plan.projection_set)  # type: ignore[arg-type]
