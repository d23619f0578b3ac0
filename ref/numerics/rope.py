"""RoPE: inv_freq and cos/sin tables computed once, correctly rounded (spec/numerics.md §rope).

The table values are the binary32 values nearest to the real functions of binary32 arguments,
so every implementation can produce them (CORE-MATH's cr_powf / cr_cosf / cr_sinf do, and so
does any multi-precision library); the reference evaluates them with mpmath at ROPE_WORK_BITS
and refuses, rather than guesses, any value within 2**ROPE_MIDPOINT_GUARD_EXP2 of a midpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mpmath
import numpy as np

from weightfile.spec.numerics.constants import ROPE_MIDPOINT_GUARD_EXP2, ROPE_WORK_BITS

from .f32 import F32, ONE


def round_to_f32(v: mpmath.mpf) -> np.float32:
    """The binary32 value nearest to v (ties cannot occur for these transcendental values)."""
    guess = F32(float(v))  # within one binary32 ulp of the answer
    candidates = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]
    dist = sorted((abs(mpmath.mpf(float(c)) - v), i) for i, c in enumerate(candidates))
    if dist[1][0] - dist[0][0] <= abs(v) * mpmath.mpf(2) ** ROPE_MIDPOINT_GUARD_EXP2:
        raise RuntimeError(f"rope table value {v} too close to a binary32 midpoint")
    return candidates[dist[0][1]]


def correctly_rounded(fn: Callable[..., mpmath.mpf], *args: np.float32) -> np.float32:
    """fn of binary32 arguments, evaluated at ROPE_WORK_BITS and rounded once to binary32."""
    with mpmath.workprec(ROPE_WORK_BITS):
        return round_to_f32(fn(*(mpmath.mpf(float(a)) for a in args)))


def inv_freq(theta: np.float32, rotary_dim: int) -> list[np.float32]:
    """spec/numerics.md §inv-freq inv_freq[i] = 1 / pow(theta, (2i) / d), pow correctly rounded, /
    rounded, i < d/2."""
    d = F32(rotary_dim)
    return [
        ONE / correctly_rounded(mpmath.power, theta, F32(2 * i) / d) for i in range(rotary_dim // 2)
    ]


def mrope_axis(slot: int, sections: Sequence[int] | None) -> int:
    """spec/numerics.md §mrope-positions Interleaved MRoPE: slot i takes H (1) if i%3==1 and i<3*s1,
    W (2) if i%3==2 and i<3*s2, else T (0). Without sections every slot is T (plain RoPE)."""
    if sections:
        if slot % 3 == 1 and slot < 3 * sections[1]:
            return 1
        if slot % 3 == 2 and slot < 3 * sections[2]:
            return 2
    return 0


class RopeTables:
    """spec/numerics.md §cos-sin cos/sin rows per integer position, computed on first use and
    kept."""

    def __init__(self, theta: np.float32, rotary_dim: int) -> None:
        self.inv_freq = inv_freq(theta, rotary_dim)
        self._rows: dict[int, tuple[list[np.float32], list[np.float32]]] = {}

    def row(self, position: int) -> tuple[list[np.float32], list[np.float32]]:
        """(cos, sin) of angle_i = float32(position) * inv_freq[i], each correctly rounded."""
        if position not in self._rows:
            angles = [F32(position) * f for f in self.inv_freq]
            cos = [correctly_rounded(mpmath.cos, a) for a in angles]
            sin = [correctly_rounded(mpmath.sin, a) for a in angles]
            self._rows[position] = (cos, sin)
        return self._rows[position]

    def cos_sin(
        self, position_ids: Sequence[int], sections: Sequence[int] | None
    ) -> tuple[list[np.float32], list[np.float32]]:
        """spec/numerics.md §mrope-positions cos/sin for one token with MRoPE ids (t, h, w); slot i
        uses its axis' row."""
        cos, sin = [], []
        for i in range(len(self.inv_freq)):
            c, s = self.row(position_ids[mrope_axis(i, sections)])
            cos.append(c[i])
            sin.append(s[i])
        return cos, sin


def apply_rope(
    x: Sequence[np.float32], cos: Sequence[np.float32], sin: Sequence[np.float32]
) -> list[np.float32]:
    """spec/numerics.md §rotation rotate_half pairs (j, j+h): x'_j = x_j c - x_{j+h} s, x'_{j+h} =
    x_{j+h} c + x_j s."""
    h = len(cos)
    out = list(x)
    for j in range(h):
        out[j] = x[j] * cos[j] - x[j + h] * sin[j]
        out[j + h] = x[j + h] * cos[j] + x[j] * sin[j]
    return out
