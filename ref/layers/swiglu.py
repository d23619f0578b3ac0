"""The SwiGLU feed-forward network: down(silu(gate(n)) · up(n)) (spec/numerics.md §silu, §matmul).

`swiglu_ffn` runs one token through one FFN (a MoE expert, or a dense FFN); `swiglu_rows` runs
all tokens of a call one operation at a time, in the order gate, up, swiglu, down.
"""

from __future__ import annotations

from typing import Protocol

from weightfile.ref.numerics.kernels import Kernels
from weightfile.ref.numerics.matrix import Matrix

from .tokens import Vec, each


class SwigluWeights(Protocol):
    """The three matrices of one SwiGLU FFN: gate and up [I, H], down [H, I]."""

    @property
    def gate(self) -> Matrix: ...
    @property
    def up(self) -> Matrix: ...
    @property
    def down(self) -> Matrix: ...


def swiglu_ffn(kernels: Kernels, w: SwigluWeights, n: Vec) -> tuple[Vec, Vec, Vec, Vec]:
    """(gate, up, silu(gate)·up, down) of one token through one SwiGLU FFN (spec/numerics.md
    §silu)."""
    g, u = kernels.matvec(w.gate, n), kernels.matvec(w.up, n)
    sw = kernels.swiglu(g, u)
    return g, u, sw, kernels.matvec(w.down, sw)


def swiglu_rows(
    kernels: Kernels, gate: Matrix, up: Matrix, down: Matrix, n: list[Vec]
) -> tuple[list[Vec], list[Vec], list[Vec], list[Vec]]:
    """(gate, up, swiglu, down) rows of every token, each operation over all tokens before the
    next (spec/numerics.md §silu)."""
    g = each(lambda v: kernels.matvec(gate, v), n)
    u = each(lambda v: kernels.matvec(up, v), n)
    sw = each(kernels.swiglu, g, u)
    d = each(lambda v: kernels.matvec(down, v), sw)
    return g, u, sw, d
