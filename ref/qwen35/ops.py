"""The Qwen3.5-specific operations on one token's vectors (spec/models.md §qwen35;
spec/numerics.md §log, §gdn, spec/models.md §qwen35-forward).

`Ops` binds a numerics profile's kernels to a config and adds what Qwen3 does not have: the
zero-centred RMSNorm (1 + w), sigmoid gates, partial rotary embedding, softplus. Everything
is element-wise binary32 or goes through the kernels' canonical dot and sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from weightfile.ref.layers.heads import split_heads
from weightfile.ref.layers.norm import head_rmsnorm, rmsnorm, zero_centred
from weightfile.ref.layers.tokens import Vec
from weightfile.ref.numerics.f32 import F32, ONE
from weightfile.ref.numerics.kernels import Kernels
from weightfile.ref.numerics.log import softplus
from weightfile.ref.numerics.rope import RopeTables, apply_rope

from .config import Qwen35Config

__all__ = ["Ops", "Vec", "zero_centred"]


@dataclass
class Ops:
    kernels: Kernels
    config: Qwen35Config
    rope: RopeTables | None  # None when the model has no full-attention layer

    def sigmoid(self, x: np.float32) -> np.float32:
        """spec/numerics.md §silu sigmoid(x) = 1 / (1 + exp(-x)) with the profile's exp."""
        return ONE / (ONE + self.kernels.exp(-x))

    def softplus(self, x: np.float32) -> np.float32:
        """spec/numerics.md §softplus softplus with the canonical log1p and exp."""
        return F32(softplus(x))

    def norm(self, x: Sequence[np.float32], effective_weight: np.ndarray) -> Vec:
        """spec/numerics.md §rmsnorm RMSNorm with the config's eps; zero-centred callers pass 1 +
        w."""
        return rmsnorm(self.kernels, x, effective_weight, self.config.eps_f32)

    def head_norm(self, v: Vec, effective_weight: np.ndarray, head_dim: int) -> Vec:
        """q_norm / k_norm: RMSNorm over head_dim per head (zero-centred weight, shared)."""
        return head_rmsnorm(self.kernels, v, effective_weight, head_dim, self.config.eps_f32)

    def partial_rope(self, v: Vec, position_ids: Sequence[int]) -> Vec:
        """spec/numerics.md §rope rotate_half RoPE on the first rotary_dim dims of every head,
        interleaved MRoPE sections; the remaining head_dim − rotary_dim dims pass through
        unchanged."""
        assert self.rope is not None
        c = self.config
        cos, sin = self.rope.cos_sin(position_ids, c.mrope_section)
        rot = c.rotary_dim
        out: Vec = []
        for head in split_heads(v, c.head_dim):
            out += apply_rope(head[:rot], cos, sin) + head[rot:]
        return out

    def gate(self, x: Vec, gate: Vec) -> Vec:
        """Gated attention output: x_i · sigmoid(g_i), one rounding for the product."""
        return [v * self.sigmoid(g) for v, g in zip(x, gate, strict=True)]
