"""exp_neon4, the Arm reciprocal estimate and step, and the dense SiLU (spec/numerics.md
§board-exp).

exp_neon4 is the engine's 4-lane polynomial exp; FRECPE / FRECPS are emulated from the Arm
architecture's definition of their arithmetic, so the SiLU of the board is reproduced on any ISA.
"""

from __future__ import annotations

import numpy as np

from .fma import fma_f32

F32 = np.float32
LOG2E = F32(1.4426950408889634)
LN2 = F32(0.6931471805599453)
CLAMP = F32(87.0)
#: Horner coefficients, highest degree first: 1/720, 1/120, 1/24, 1/6, 1/2, 1, 1.
TAYLOR6 = tuple(F32(1.0 / k) for k in (720, 120, 24, 6, 2, 1, 1))


def exp_neon4(x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-exp-neon4 clamp to ±87, n = rne(x·log2e), r = fma(-n, ln2, x),
    degree-6 Horner with FMA, then n added to the exponent bits. float32 in and out,
    element-wise."""
    x = np.clip(x.astype(F32), -CLAMP, CLAMP)
    n = np.rint(x * LOG2E).astype(F32)  # rint: nearest, ties to even
    r = fma_f32(-n, np.full_like(x, LN2), x)
    p = np.full_like(x, TAYLOR6[0])
    for c in TAYLOR6[1:]:
        p = fma_f32(p, r, np.full_like(x, c))
    bits = p.view(np.int32) + (n.astype(np.int32) << 23)
    return bits.astype(np.int32).view(F32)


def frecpe(d: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-reciprocal FRECPE for positive normal float32 inputs whose reciprocal
    is normal: a = 256 + the top 8 fraction bits, b = floor(2**19 / (2a + 1)), r = floor((b + 1)
    / 2), result exponent 253 - e, fraction r's low 8 bits then zeros."""
    bits = np.asarray(d, dtype=F32).view(np.uint32).astype(np.int64)
    e = (bits >> 23) & 0xFF
    if np.any((e == 0) | (e >= 253) | (bits >> 31 != 0)):
        raise ValueError("frecpe emulation covers positive normal inputs below 2**126 only")
    a = 256 + ((bits >> 15) & 0xFF)
    b = (1 << 19) // (2 * a + 1)
    r = (b + 1) // 2
    out = ((253 - e) << 23) | ((r & 0xFF) << 15)
    return out.astype(np.uint32).view(F32)


def frecps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-reciprocal FRECPS: 2 - a·b with one rounding."""
    return fma_f32(-a.astype(F32), b, np.full_like(a, F32(2.0), dtype=F32))


def reciprocal(d: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-reciprocal the estimate refined by two Newton steps,
    x = fl(x · frecps(d, x))."""
    x = frecpe(d)
    for _ in range(2):
        x = x * frecps(d, x)
    return x


def silu_mul(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-silu dense SwiGLU: per group of 4, e = exp_neon4(-g), r = the
    refined reciprocal of fl(e + 1), out = fl(fl(g·r)·u). Elements past the last whole group of
    4 are refused (the engine's scalar tail is not covered by the packs)."""
    g, u = gate.astype(F32), up.astype(F32)
    if len(g) % 4:
        raise ValueError(f"silu_mul of {len(g)} elements: not a whole number of 4-lane groups")
    r = reciprocal(exp_neon4(-g) + F32(1.0))
    return (g * r) * u
