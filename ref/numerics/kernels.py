"""A profile turned into functions: the only numerics the forward pass calls (spec/numerics.md §1).

`kernels_for(profile)` looks each rule name of the profile up in the tables below. A new profile
adds its rules to these tables; the forward pass in `ref/qwen3` does not change. Every vector
operation receives a `Site` -- which operation of which layer, for which token of how many in
the call -- because an engine profile may pick its rule by site (the board uses other kernels for
the lm_head than for projections, and for prefill tokens than for decode); the canonical profile
ignores it, which is exactly what makes it batch invariant (spec/numerics.md §12).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from weightfile.spec.numerics.profile import NumericsProfile, QuantizedMatmul

from . import attention, norm, quant, reduce, rope, softmax
from . import exp as exp_mod
from .f32 import F32
from .matrix import DenseMatrix, Matrix, QuantMatrix

Vector = Sequence[np.float32]

_DOT = {"lanes8_tree": reduce.dot}
_SUM = {"lanes8_tree": reduce.sum_f32}
_EXP = {"cody_waite_taylor7": exp_mod.exp}
_SILU = {"x_div_1_plus_exp": exp_mod.silu}
_RMSNORM = {"lanes8_sumsq_div_sqrt": norm.rmsnorm}
_SOFTMAX = {"max_exp_lanes8_div": softmax.softmax}
_ROPE = {"correctly_rounded_once": rope.RopeTables}
_QUANT = {
    QuantizedMatmul.Q8_ACTIVATION: quant.matvec_q8_activation,
    QuantizedMatmul.F32_WEIGHTS: quant.matvec_f32_weights,
}
_ROUNDING = {"nearest_even"}


@dataclass(frozen=True)
class Site:
    """Where an operation runs: trace-style op name, layer (None outside layers), token t of T."""

    op: str
    layer: int | None = None
    token: int = 0
    tokens: int = 1


def _rule(table: dict, name: object, what: str) -> Callable:
    if name not in table:
        raise NotImplementedError(f"numerics rule {name!r} for {what} has no implementation")
    return table[name]


@dataclass(frozen=True)
class Kernels:
    """The operations of one profile, each a plain function of float32 values."""

    profile: NumericsProfile
    dot: Callable[[Vector, Vector], np.float32]
    sum: Callable[[Vector], np.float32]
    exp: Callable[[np.float32], np.float32]
    silu: Callable[[np.float32], np.float32]
    _rmsnorm: Callable[[Vector, Vector, np.float32], list]
    _softmax: Callable[..., list]
    _quant_matvec: Callable[[QuantMatrix, Vector], list]
    rope_tables: Callable[[np.float32, int], rope.RopeTables]

    def rmsnorm(
        self, x: Vector, weight: Vector, eps: np.float32, site: Site | None = None
    ) -> list[np.float32]:
        """spec/numerics.md §5.1 RMSNorm of one vector."""
        return self._rmsnorm(x, weight, eps)

    def softmax(self, scores: Vector, site: Site | None = None) -> list[np.float32]:
        """spec/numerics.md §5.2 Softmax of one score vector, with this profile's exp."""
        return self._softmax(scores, self.exp)

    def matvec(self, m: Matrix, x: Vector, site: Site | None = None) -> list[np.float32]:
        """spec/numerics.md §3.4 / §4 y = W x for one activation vector; each row a dot in the
        profile's order."""
        if m.shape[1] != len(x):
            raise ValueError(f"matvec of a {m.shape} matrix with a vector of {len(x)}")
        if isinstance(m, DenseMatrix):
            return [self.dot(row, x) for row in m.values]
        return self._quant_matvec(m, x)

    def attend(
        self, q: Vector, keys: Sequence[Vector], values: Sequence[Vector], site: Site | None = None
    ) -> list[np.float32]:
        """spec/numerics.md §9 One query head over the cached K/V of its kv head, positions 0..p."""
        return attention.attend_head(q, keys, values, self.dot, self.softmax)

    def swiglu(self, gate: Vector, up: Vector, site: Site | None = None) -> list[np.float32]:
        """spec/numerics.md §7 silu(g_i) * u_i, element-wise."""
        return [self.silu(g) * u for g, u in zip(gate, up, strict=True)]

    def add(self, a: Vector, b: Vector, site: Site | None = None) -> list[np.float32]:
        """spec/numerics.md §5.3 Residual add: one rounding per element."""
        return [F32(x + y) for x, y in zip(a, b, strict=True)]


def kernels_for(profile: NumericsProfile) -> Kernels:
    """Resolve every rule the profile names; NotImplementedError for a rule without code."""
    if profile.fma:
        raise NotImplementedError("profiles with fused multiply-add have no kernels yet")
    _rule({r: r for r in _ROUNDING}, profile.activation_rounding, "activation rounding")
    return Kernels(
        profile=profile,
        dot=_rule(_DOT, profile.dot, "dot"),
        sum=_rule(_SUM, profile.dot, "sum"),
        exp=_rule(_EXP, profile.exp, "exp"),
        silu=_rule(_SILU, profile.silu, "silu"),
        _rmsnorm=_rule(_RMSNORM, profile.rmsnorm, "rmsnorm"),
        _softmax=_rule(_SOFTMAX, profile.softmax, "softmax"),
        _quant_matvec=_rule(_QUANT, profile.quantized_matmul, "quantized matmul"),
        rope_tables=_rule(_ROPE, profile.rope_tables, "rope tables"),
    )
