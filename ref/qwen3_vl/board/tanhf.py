"""aarch64 glibc 2.36's tanhf, emulated bit for bit (spec/numerics.md §board-vision-tanhf).

The board's GELU calls the C library's tanhf. glibc computes it from its float expm1f (the old
SunPro algorithm), and its aarch64 build lets the compiler fuse several multiply-adds of expm1f
into FMA instructions; an x86-64 build of the same source does not. So the host's tanhf is not
the board's (they differ in the last bit on a few inputs in a hundred thousand), and the value is
computed here step by step, with the fused steps as one-rounding FMAs, in binary32.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.qwen3.board.fma import fma_f32

F32 = np.float32


def _f(bits: int) -> np.float32:
    return np.uint32(bits).view(F32)


def _bits(x: np.float32) -> int:
    return int(F32(x).view(np.uint32))


LN2_HI, LN2_LO, INV_LN2 = _f(0x3F317180), _f(0x3717F7D1), _f(0x3FB8AA3B)
#: expm1f's polynomial in hxs = x²/2, Q1 … Q5.
Q = tuple(_f(b) for b in (0xBD088889, 0x3AD00D01, 0xB8A670CD, 0x36867E54, 0xB457EDBB))
TINY = _f(0x0DA24260)  # 1e-30
ONE, HALF, TWO = F32(1.0), F32(0.5), F32(2.0)


def _fma(a, b, c) -> np.float32:
    return F32(fma_f32(F32(a), F32(b), F32(c)))


def _scale(y: np.float32, k: int) -> np.float32:
    """y with k added to its exponent field (an integer add on the bit pattern)."""
    return _f((_bits(y) + (k << 23)) & 0xFFFFFFFF)


def _reduce(x: np.float32, hx: int, negative: bool) -> tuple[np.float32, np.float32, int]:
    """spec/numerics.md §board-vision-tanhf the argument reduction of expm1f for |x| > ln2/2:
    (r, c, k) with x ≈ k·ln2 + r, c the rounding error of r."""
    if hx < 0x3F851592:  # |x| < 1.5 ln2
        hi, lo, k = (x + LN2_HI, -LN2_LO, -1) if negative else (x - LN2_HI, LN2_LO, 1)
    else:
        k = int(np.trunc((F32(-0.5) if negative else HALF) + x * INV_LN2))
        t = F32(k)
        hi, lo = _fma(-t, LN2_HI, x), t * LN2_LO
    r = hi - lo
    return r, (hi - r) - lo, k


def _tail(x: np.float32, e: np.float32, c: np.float32, hxs: np.float32, k: int) -> np.float32:
    """spec/numerics.md §board-vision-tanhf expm1f's reconstruction for k ≠ 0."""
    e = _fma(e - c, x, -c) - hxs
    if k == -1:
        return _fma(x - e, HALF, F32(-0.5))
    if k == 1:
        if x < F32(-0.25):
            return (e - (x + HALF)) * F32(-2.0)
        return _fma(x - e, TWO, ONE)
    if k <= -2 or k > 56:
        return _scale(ONE - (e - x), k) - ONE
    if k > 22:
        return _scale((x - (e + _f((0x7F - k) << 23))) + ONE, k)
    return _scale(_f(0x3F800000 - (0x1000000 >> k)) - (e - x), k)


def expm1f(x: np.float32) -> np.float32:
    """spec/numerics.md §board-vision-tanhf glibc's expm1f as aarch64 builds it, for the finite
    arguments tanhf passes (|x| < 44)."""
    x = F32(x)
    hx, negative = _bits(x) & 0x7FFFFFFF, bool(_bits(x) >> 31)
    if hx > 0x4195B843 and negative:  # x < -27 ln2
        return F32(-1.0)
    if hx >= 0x42B17218:
        raise ValueError(f"expm1f emulation covers |x| < 88.72 (got {x})")
    if hx > 0x3EB17218:
        x, c, k = _reduce(x, hx, negative)
    elif hx < 0x33000000:  # |x| < 2**-25
        return x
    else:
        c, k = F32(0.0), 0
    hfx = x * HALF
    hxs = x * hfx
    r1 = _fma(hxs, Q[4], Q[3])
    for q in (Q[2], Q[1], Q[0], ONE):
        r1 = _fma(r1, hxs, q)
    t = _fma(-hfx, r1, F32(3.0))
    e = ((r1 - t) / _fma(-x, t, F32(6.0))) * hxs
    if k == 0:
        return x - _fma(x, e, -hxs)
    return _tail(x, e, c, hxs, k)


def tanhf(x: np.float32) -> np.float32:
    """spec/numerics.md §board-vision-tanhf glibc's tanhf: |x| ≥ 1 as 1 − 2/(expm1(2|x|) + 2),
    below 1 as −t/(t + 2) with t = expm1(−2|x|); ±(1 − 1e-30) from 22 on; x·(1 + x) below
    2**-55; the sign restored last."""
    x = F32(x)
    jx = _bits(x)
    ix = jx & 0x7FFFFFFF
    if ix > 0x7F7FFFFF:  # inf or NaN
        return (ONE / x + ONE) if jx >> 31 == 0 else (ONE / x - ONE)
    if ix == 0:
        return x
    if ix < 0x24000000:
        return (x + ONE) * x
    if ix > 0x41AFFFFF:
        z = ONE - TINY
    elif ix > 0x3F7FFFFF:
        z = ONE - TWO / (expm1f(abs(x) + abs(x)) + TWO)
    else:
        t = expm1f(abs(x) * F32(-2.0))
        z = -t / (t + TWO)
    return -z if jx >> 31 else z
