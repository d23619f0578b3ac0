"""Hard cases of the kestrel-board arithmetic, with an exact oracle (issue 36 item 1).

* `midpoint_blocks` -- activation blocks (spec/numerics.md §board-activations) whose scale
  d = amax ⊘ 127 is arbitrary (never 1) and whose other elements sit on, or one binary32 step
  beside, the value (k + 1/2)·d, so that x ⊘ d lands on or next to a rounding midpoint of the
  code. A quantizer that computes x ⊗ (1 ⊘ d) instead (two roundings) moves some of them across
  the midpoint.
* `close_chains` -- Q8_0 prefill products (spec/numerics.md §board-q8-prefill) whose consecutive
  blocks' terms s_b·D_b are of one magnitude (one weight-scale binade, one activation amax), so
  that the chain's separate multiply-then-add and a fused multiply-add round differently in many
  rows.
* `simd_products` -- any-int8 products for the board's SIMD bodies (fast/csrc/board_simd.c):
  codes at −128/127 on both sides, every finite f16 scale pattern, activation scales from
  subnormal to near the float32 maximum, row counts that leave tails beside whole tiles, rows
  that repeat one another and blocks whose dots cancel.

The oracle (`round32`, `act_codes_exact`, `chain_exact`) is exact rational arithmetic (Python's
`fractions`), binary32 rounding written out from IEEE 754 (nearest, ties to even), and NumPy's
float16 for the f16(d) step: independent of ref/qwen3/board and fast/csrc/board.c.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from weightfile.ref.numerics.matrix import QuantMatrix

F32 = np.float32
QBLOCK = 32


def round32(v: Fraction) -> float:
    """v rounded to binary32 (nearest, ties to even; subnormals kept), as an exact Python float."""
    v = Fraction(v)
    if v == 0:
        return 0.0
    sign, a = (-1 if v < 0 else 1), abs(v)
    e = math.floor(math.log2(a.numerator) - math.log2(a.denominator))
    while Fraction(2) ** e > a:  # log2 of huge integers is approximate: settle e exactly
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    n, rem = divmod(a, quantum)
    if rem * 2 > quantum or (rem * 2 == quantum and n % 2 == 1):
        n += 1
    out = n * quantum
    if out >= Fraction(2) ** 128:
        return sign * math.inf
    return sign * float(out)


def step32(x: float, k: int) -> float:
    """The binary32 value k steps from x (x finite, positive or negative, no zero crossing)."""
    bits = int(np.array([x], dtype=F32).view(np.uint32)[0])
    return float(np.array([bits + k], dtype=np.uint32).view(F32)[0])


def act_scale_exact(block: np.ndarray) -> float:
    """d = fl(max(1e-10, max|x|) / 127) (spec/numerics.md §board-activations)."""
    amax = max(float(F32(1e-10)), float(np.max(np.abs(block.astype(np.float64)))))
    return round32(Fraction(amax) / 127)


def act_codes_exact(block: np.ndarray, d: float) -> list[int]:
    """q = clamp(trunc(fl(fl(x / d) + 1/2)), -127, 127), every rounding done exactly."""
    out = []
    for x in block.astype(np.float64):
        t = round32(Fraction(round32(Fraction(float(x)) / Fraction(d))) + Fraction(1, 2))
        out.append(max(-127, min(127, math.trunc(t))))
    return out


@st.composite
def midpoint_blocks(draw: st.DrawFn, blocks: int = 2) -> np.ndarray:
    """`blocks` activation blocks: one maximum each (arbitrary binade and mantissa, either sign,
    amax ≠ 127 so d ≠ 1), the other 31 elements at the binary32 value nearest (k + 1/2)·d, or one
    step either side, for drawn k in [-127, 126]."""
    out = []
    for _ in range(blocks):
        exponent = draw(st.integers(-30, 30))
        mantissa = draw(st.integers(0, 2**23 - 1))
        amax = float(np.ldexp(1.0 + mantissa / 2**23, exponent))
        if amax == 127.0:
            amax = step32(amax, 1)
        d = round32(Fraction(amax) / 127)
        block = np.zeros(QBLOCK, dtype=F32)
        for i in range(QBLOCK):
            k = draw(st.integers(-127, 126))
            x = round32((k + Fraction(1, 2)) * Fraction(d))
            block[i] = step32(x, draw(st.sampled_from([0, 0, -1, 1])))
        block[draw(st.integers(0, QBLOCK - 1))] = amax if draw(st.booleans()) else -amax
        out.append(block)
    return np.concatenate(out)


def f16_widened(d: float) -> Fraction:
    """f16(d): d rounded to binary16 by NumPy (nearest even) and widened exactly."""
    return Fraction(float(np.float16(F32(d))))


def chain_exact(
    codes_w: np.ndarray, scale_bits: np.ndarray, codes_x: np.ndarray, d_x: np.ndarray, fused: bool
) -> list[float]:
    """One ascending chain per row from +0: s = fl(d_w·f16(d_x)), D the exact integer block dot,
    acc = fl(acc + fl(s·D)) (separate, spec/numerics.md §board-q8-prefill) or fl(acc + s·D)
    (fused, spec/numerics.md §board-q4-prefill)."""
    rows, cols = codes_w.shape
    d_w = scale_bits.view(np.float16).astype(np.float64)
    out = []
    for r in range(rows):
        acc = Fraction(0)
        for b in range(cols // QBLOCK):
            w = codes_w[r, b * QBLOCK : (b + 1) * QBLOCK].astype(int).tolist()
            x = codes_x[b].astype(int).tolist()
            dot = sum(p * q for p, q in zip(w, x, strict=True))
            s = Fraction(round32(Fraction(float(d_w[r, b])) * f16_widened(float(d_x[b]))))
            term = s * dot if fused else Fraction(round32(s * dot))
            acc = Fraction(round32(acc + term))
        out.append(float(acc))
    return out


@st.composite
def close_chains(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weight codes int8 [16, 32·B], f16 scale bits uint16 [16, B], activations float32 [32·B]),
    B in 3..6: Q8 weight codes, every weight scale in one f16 binade (drawn), every activation
    block with one amax (drawn), so consecutive terms s_b·D_b are of one magnitude."""
    rows, blocks = 16, draw(st.integers(3, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    codes = rng.integers(-127, 128, size=(rows, blocks * QBLOCK)).astype(np.int8)
    exponent = draw(st.integers(3, 27))  # f16 exponent field: normal scales 2^-12 .. 2^12
    mantissas = rng.integers(0, 1024, size=(rows, blocks))
    bits = ((exponent << 10) | mantissas).astype(np.uint16)
    amax = float(np.ldexp(1.0 + draw(st.integers(0, 2**23 - 1)) / 2**23, draw(st.integers(-4, 8))))
    x = (rng.uniform(-1.0, 1.0, size=blocks * QBLOCK) * amax).astype(F32)
    for b in range(blocks):
        x[b * QBLOCK + int(rng.integers(0, QBLOCK))] = F32(amax)
    return codes, bits, x


f16_finite = st.integers(0, 0xFFFF).filter(lambda b: (b >> 10) & 0x1F != 0x1F)
f16_hard = st.one_of(
    st.sampled_from([0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x8001, 0xFBFF, 0x0000, 0x8000]),
    f16_finite,
)


def _f32s(*v: float) -> list[float]:
    return [float(F32(x)) for x in v]


dx_elem = st.one_of(
    st.sampled_from(_f32s(2.0**-149, 1.1754942e-38, 1.0, 3.0e38, 1.0 / 127, 2.0**-24)),
    st.floats(*_f32s(2.0**-149, 3.0e38), width=32),
)
code_ranges = st.sampled_from([(-8, 7), (-127, 127), (-128, 127), (-128, -128), (127, 127)])


@st.composite
def simd_products(draw: st.DrawFn) -> tuple[QuantMatrix, np.ndarray, np.ndarray]:
    """(matrix, activation codes int8 [cols], activation scales float32 [cols/32]): 1-37 rows,
    1-5 blocks."""
    rows, blocks = draw(st.integers(1, 40)), draw(st.integers(1, 5))
    cols = blocks * QBLOCK
    lo, hi = draw(code_ranges)
    codes = draw(hnp.arrays(np.int8, (rows, cols), elements=st.integers(lo, hi)))
    xlo, xhi = draw(code_ranges)
    xc = draw(hnp.arrays(np.int8, cols, elements=st.integers(xlo, xhi)))
    bits = draw(hnp.arrays(np.uint16, (rows, blocks), elements=f16_hard))
    dx = draw(hnp.arrays(F32, blocks, elements=dx_elem))
    if rows > 1 and draw(st.booleans()):
        codes[1::2] = codes[0]  # equal rows in different lanes must give equal bits
        bits[1::2] = bits[0]
    if blocks > 1 and draw(st.booleans()):
        codes[:, 32:64] = -codes[:, :32].astype(np.int16).clip(-127, 127)  # D1 = -D0: cancel
        xc[32:64], bits[:, 1], dx[1] = xc[:32], bits[:, 0], dx[0]
    return QuantMatrix(codes, bits), xc, dx
