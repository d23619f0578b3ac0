"""RMSNorm variants, each on the profile's spec/numerics.md §rmsnorm RMSNorm (spec/numerics.md
§rmsnorm, §gated-rmsnorm, spec/models.md §qwen35-rmsnorm).

* plain: RMSNorm(x) · w, the weight used as stored (Qwen3, and Qwen3.5's gated norm);
* per head: the same over each head_dim slice of a [heads·head_dim] vector (q_norm / k_norm);
* zero-centred: the stored w means the weight 1 + w, made effective once at load;
* gated: RMSNorm(x) · w, then times SiLU of a gate vector (Gated DeltaNet output norm).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.ref.numerics import deltanet
from weightfile.ref.numerics.f32 import ONE
from weightfile.ref.numerics.kernels import Kernels

from .heads import split_heads
from .tokens import Vec


def rmsnorm(kernels: Kernels, x: Sequence[np.float32], weight, eps: np.float32) -> Vec:
    """spec/numerics.md §rmsnorm RMSNorm of one vector with the weight as given."""
    return kernels.rmsnorm(x, weight, eps)


def head_rmsnorm(
    kernels: Kernels, v: Vec, weight: np.ndarray, head_dim: int, eps: np.float32
) -> Vec:
    """q_norm / k_norm: spec/numerics.md §rmsnorm over every head, one weight [head_dim] shared."""
    out: Vec = []
    for head in split_heads(v, head_dim):
        out += kernels.rmsnorm(head, weight, eps)
    return out


def zero_centred(weight: np.ndarray) -> np.ndarray:
    """spec/models.md §qwen35-rmsnorm The effective weight of a zero-centred RMSNorm: 1 + w, one
    rounding per element; callers then use the plain norm with it."""
    return (ONE + np.asarray(weight, dtype=np.float32)).astype(np.float32)


def gated_rmsnorm(
    kernels: Kernels, x: Vec, weight: Vec, gate: Vec, eps: np.float32
) -> list[np.float32]:
    """spec/numerics.md §gated-rmsnorm (RMSNorm(x) · w) · silu(gate), with the profile's SiLU."""
    return deltanet.gated_rmsnorm(x, weight, gate, eps, kernels.silu)
