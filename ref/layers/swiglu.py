"""The SwiGLU feed-forward network: down(silu(gate(n)) · up(n)) (spec/numerics.md §7, §3.4).

`swiglu_ffn` runs one token through one FFN under one site (a MoE expert, or a dense FFN whose
profile site is the whole FFN); `swiglu_rows` runs all tokens of a call with one site per
operation, the four operations in the order gate, up, swiglu, down.
"""

from __future__ import annotations

from typing import Protocol

from weightfile.ref.numerics.kernels import Kernels, Site
from weightfile.ref.numerics.matrix import Matrix

from .tokens import Vec, per_token


class SwigluWeights(Protocol):
    """The three matrices of one SwiGLU FFN: gate and up [I, H], down [H, I]."""

    @property
    def gate(self) -> Matrix: ...
    @property
    def up(self) -> Matrix: ...
    @property
    def down(self) -> Matrix: ...


def swiglu_ffn(kernels: Kernels, w: SwigluWeights, n: Vec, site: Site) -> tuple[Vec, Vec, Vec, Vec]:
    """(gate, up, silu(gate)·up, down) of one token through one SwiGLU FFN (spec/numerics.md §7)."""
    g, u = kernels.matvec(w.gate, n, site), kernels.matvec(w.up, n, site)
    sw = kernels.swiglu(g, u, site)
    return g, u, sw, kernels.matvec(w.down, sw, site)


def swiglu_rows(
    kernels: Kernels, layer: int, gate: Matrix, up: Matrix, down: Matrix, n: list[Vec]
) -> tuple[list[Vec], list[Vec], list[Vec], list[Vec]]:
    """(gate, up, swiglu, down) rows of every token, each operation under its own site named
    gate_proj, up_proj, swiglu, down_proj (spec/numerics.md §7)."""
    each = per_token(layer, len(n))
    g = each("gate_proj", lambda v, s: kernels.matvec(gate, v, s), n)
    u = each("up_proj", lambda v, s: kernels.matvec(up, v, s), n)
    sw = each("swiglu", kernels.swiglu, g, u)
    d = each("down_proj", lambda v, s: kernels.matvec(down, v, s), sw)
    return g, u, sw, d
