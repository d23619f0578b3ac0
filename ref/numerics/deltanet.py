"""The Gated DeltaNet operations in the canonical order (spec/numerics.md §gdn).

Each function is one step of a linear-attention layer for one token (spec/models.md §qwen35): the
causal depthwise convolution over a window of the last `kernel` inputs, the L2 normalisation of a
query/key head, the gated delta rule on one value head's state, and the gated RMSNorm. Every sum
goes through the canonical dot/sum (spec/numerics.md §lanes8-tree), every other step is an
element-wise binary32 operation (NumPy element-wise ops on float32 arrays round each element once),
so the result does not depend on how many tokens the call carries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .f32 import ONE
from .norm import rmsnorm
from .reduce import dot, sum_f32

Vec = Sequence[np.float32]
#: The epsilon of the L2 normalisation of q and k (transformers' and FLA's l2norm), as binary32.
L2NORM_EPS = np.float32(1e-6)


def conv_channel(taps: Vec, window: Vec) -> np.float32:
    """spec/numerics.md §gdn-conv One channel: the canonical dot of the kernel taps with the inputs,
    oldest first."""
    return dot(taps, window)


def causal_conv(weight: np.ndarray, window: Sequence[Vec]) -> list[np.float32]:
    """spec/numerics.md §gdn-conv Depthwise causal conv1d of the newest input: weight [kernel,
    channels] (tap j multiplies the input kernel − 1 − j steps back), window [kernel][channels],
    oldest first; positions before the sequence are +0.0 (left padding)."""
    kernel, channels = weight.shape
    return [
        conv_channel([weight[j][c] for j in range(kernel)], [window[j][c] for j in range(kernel)])
        for c in range(channels)
    ]


def l2normalize(x: Vec, eps: np.float32 = L2NORM_EPS) -> list[np.float32]:
    """spec/numerics.md §gdn-l2norm x_i · r with r = 1 / sqrt(Σ x_j² + eps): canonical sum,
    correctly rounded sqrt."""
    r = ONE / np.sqrt(sum_f32(v * v for v in x) + eps)
    return [v * r for v in x]


def delta_rule_step(
    state: np.ndarray,
    q: Vec,
    k: Vec,
    v: Vec,
    decay: np.float32,
    beta: np.float32,
    dot_fn: Callable[[Vec, Vec], np.float32] = dot,
) -> tuple[np.ndarray, list[np.float32]]:
    """spec/numerics.md §gdn-gates One token on one value head's state S [dk, dv] (float32),
    returning (S', o).

    S ← S · decay; m_j = Σ_i S[i,j] k_i; δ_j = (v_j − m_j) · β; S ← S + k_i δ_j (product then
    sum, two roundings per element); o_j = Σ_i S[i,j] q_i. Sums use the canonical dot.
    """
    decayed = state * decay
    columns = decayed.shape[1]
    memory = [dot_fn(decayed[:, j], k) for j in range(columns)]
    delta = np.array([(v[j] - memory[j]) * beta for j in range(columns)], dtype=np.float32)
    updated = decayed + np.multiply.outer(np.asarray(k, dtype=np.float32), delta)
    out = [dot_fn(updated[:, j], q) for j in range(columns)]
    return updated, out


def gated_rmsnorm(
    x: Vec, weight: Vec, gate: Vec, eps: np.float32, silu: Callable[[np.float32], np.float32]
) -> list[np.float32]:
    """spec/numerics.md §delta-rule ((x_i · r) · w_i) · silu(z_i): RMSNorm (spec/numerics.md
    §rmsnorm, weight as stored) times SiLU(gate)."""
    return [n * silu(z) for n, z in zip(rmsnorm(x, weight, eps), gate, strict=True)]
