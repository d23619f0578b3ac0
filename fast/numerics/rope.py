"""RoPE cos/sin rows, correctly rounded, without multi-precision in the common case (numerics
spec/numerics.md §rope).

The contract's table values are the binary32 values nearest to cos / sin of binary32 angles. The
reference evaluates every one with mpmath. Here each is first evaluated in binary64 (libm, error
a few binary64 ulps at most) and rounded to binary32; that rounding is provably the correct one
unless the binary64 value lies within 2**-40 (relative) of a binary32 rounding midpoint, far more
than libm's error. Those rare values are handed to the reference's multi-precision evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mpmath
import numpy as np

from weightfile.ref.numerics.rope import RopeTables, correctly_rounded, mrope_axis

#: Relative distance to a binary32 midpoint under which the binary64 shortcut is not trusted.
MIDPOINT_MARGIN = 2.0**-40


def round_checked(
    angles: np.ndarray, f64: Callable[[np.ndarray], np.ndarray], exact: Callable
) -> np.ndarray:
    """binary32 f(angle) for float32 angles: binary64 rounded once, or `exact` where unsure.

    The midpoints between the rounded value and its two binary32 neighbours are exact in
    binary64; the rounding is trusted when the binary64 value is farther than the margin from
    both (at a power of two the two midpoints are at different distances, which this handles)."""
    wide = f64(angles.astype(np.float64))
    out = wide.astype(np.float32)
    back = out.astype(np.float64)
    up = np.nextafter(out, np.float32(np.inf)).astype(np.float64)
    down = np.nextafter(out, np.float32(-np.inf)).astype(np.float64)
    near = np.minimum(np.abs(wide - (back + up) / 2), np.abs(wide - (back + down) / 2))
    for i in np.flatnonzero(near <= np.abs(wide) * MIDPOINT_MARGIN):
        out[i] = correctly_rounded(exact, angles[i])
    return out


class FastRopeTables:
    """spec/numerics.md §cos-sin cos / sin rows per position and spec/numerics.md §mrope-positions
    MRoPE slot selection, as float32 arrays."""

    def __init__(self, tables: RopeTables) -> None:
        self.inv_freq = np.array(tables.inv_freq, dtype=np.float32)  # the reference's, once
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def row(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) of angle_i = float32(position) * inv_freq[i] (one rounding)."""
        if position not in self._rows:
            angles = np.float32(position) * self.inv_freq
            self._rows[position] = (
                round_checked(angles, np.cos, mpmath.cos),
                round_checked(angles, np.sin, mpmath.sin),
            )
        return self._rows[position]

    def cos_sin(
        self, position_ids: Sequence[int], sections: Sequence[int] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """cos / sin [head_dim/2] of one token with MRoPE ids (t, h, w)."""
        if not sections:
            return self.row(position_ids[0])
        axes = [mrope_axis(i, sections) for i in range(len(self.inv_freq))]
        rows = [self.row(position_ids[a]) for a in range(3)]
        cos = np.array([rows[a][0][i] for i, a in enumerate(axes)], dtype=np.float32)
        sin = np.array([rows[a][1][i] for i, a in enumerate(axes)], dtype=np.float32)
        return cos, sin
