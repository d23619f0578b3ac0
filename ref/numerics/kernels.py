"""The canonical profile turned into functions: the only numerics the forward pass calls
(spec/numerics.md §profiles).

`kernels_for(profile)` gives the canonical operations, with the profile's quantized-matmul mode
(spec/numerics.md §q8-activation or §f32-weights, the one choice the canonical profile leaves to its
user). Every other rule is the canonical one: a profile whose rules differ (the board's,
spec/numerics.md §board) is a different sequence of operations, run by its own models
(`ref/qwen3/board`, named by the profile registry weightfile/profiles.py), and `kernels_for` refuses
it. The operations take no notice of where in a call they run, which is what makes the forward pass
batch invariant (spec/numerics.md §batch-invariance).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile, QuantizedMatmul

from . import attention, norm, quant, reduce, rope, softmax
from . import exp as exp_mod
from .f32 import F32
from .hadamard import hadamard
from .matrix import DenseMatrix, HadamardMatrix, Matrix, QuantMatrix, RowStack

Vector = Sequence[np.float32]

#: spec/numerics.md §quantized-matmul: the two quantized-weight modes a canonical profile may
#: select.
_QUANT = {
    QuantizedMatmul.Q8_ACTIVATION: quant.matvec_q8_activation,
    QuantizedMatmul.F32_WEIGHTS: quant.matvec_f32_weights,
}


@dataclass(frozen=True)
class Kernels:
    """The operations of the canonical profile, each a plain function of float32 values."""

    profile: NumericsProfile
    dot: Callable[[Vector, Vector], np.float32]
    sum: Callable[[Vector], np.float32]
    exp: Callable[[np.float32], np.float32]
    silu: Callable[[np.float32], np.float32]
    _rmsnorm: Callable[[Vector, Vector, np.float32], list]
    _softmax: Callable[..., list]
    _quant_matvec: Callable[[QuantMatrix, Vector], list]
    rope_tables: Callable[[np.float32, int], rope.RopeTables]

    def rmsnorm(self, x: Vector, weight: Vector, eps: np.float32) -> list[np.float32]:
        """spec/numerics.md §rmsnorm RMSNorm of one vector."""
        return self._rmsnorm(x, weight, eps)

    def softmax(self, scores: Vector) -> list[np.float32]:
        """spec/numerics.md §softmax Softmax of one score vector, with this profile's exp."""
        return self._softmax(scores, self.exp)

    def matvec(self, m: Matrix | HadamardMatrix | RowStack, x: Vector) -> list[np.float32]:
        """spec/numerics.md §matmul / §quantized-matmul y = W x for one activation vector; each row
        a dot in the profile's order. A HadamardMatrix rotates x first (spec/numerics.md
        §hadamard); a RowStack is its parts' products one after another."""
        if m.shape[1] != len(x):
            raise ValueError(f"matvec of a {m.shape} matrix with a vector of {len(x)}")
        if isinstance(m, RowStack):
            return [y for part in m.parts for y in self.matvec(part, x)]
        if isinstance(m, HadamardMatrix):
            return self.matvec(m.matrix, hadamard(x, m.signs.tolist()))
        if isinstance(m, DenseMatrix):
            return [self.dot(row, x) for row in m.values]
        return self._quant_matvec(m, x)

    def attend(
        self, q: Vector, keys: Sequence[Vector], values: Sequence[Vector]
    ) -> list[np.float32]:
        """spec/numerics.md §attention One query head over the cached K/V of its kv head, positions
        0..p."""
        return attention.attend_head(q, keys, values, self.dot, self.softmax)

    def swiglu(self, gate: Vector, up: Vector) -> list[np.float32]:
        """spec/numerics.md §silu silu(g_i) * u_i, element-wise."""
        return [self.silu(g) * u for g, u in zip(gate, up, strict=True)]

    def add(self, a: Vector, b: Vector) -> list[np.float32]:
        """spec/numerics.md §residual Residual add: one rounding per element."""
        return [F32(x + y) for x, y in zip(a, b, strict=True)]


def kernels_for(profile: NumericsProfile) -> Kernels:
    """The canonical kernels with the profile's quantized-matmul mode; NotImplementedError for a
    profile naming any other rule (spec/numerics.md §profiles)."""
    for f in fields(profile):
        if f.name not in ("name", "quantized_matmul"):
            rule, canonical = getattr(profile, f.name), getattr(CANONICAL, f.name)
            if rule != canonical:
                raise NotImplementedError(
                    f"numerics rule {f.name}={rule!r} has no kernels (only {canonical!r}): "
                    f"profile {profile.name!r} runs its own models"
                )
    return Kernels(
        profile=profile,
        dot=reduce.dot,
        sum=reduce.sum_f32,
        exp=exp_mod.exp,
        silu=exp_mod.silu,
        _rmsnorm=norm.rmsnorm,
        _softmax=softmax.softmax,
        _quant_matvec=_QUANT[profile.quantized_matmul],
        rope_tables=rope.RopeTables,
    )
