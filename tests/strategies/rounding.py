"""Strategies that land on rounding decisions on purpose (issue 14 item 7).

Random float32 inputs almost never sit exactly on a tie, so a codec that rounds a tie the wrong
way (or computes a scale one ulp off) passes a fast == ref property by luck. These strategies
generate the hard cases directly:

* `f16_ties` / `bf16_ties` -- float32 values exactly halfway between two adjacent f16 (normal or
  subnormal) or bf16 values, of both parities, and their float32 neighbours one ulp away;
* `scale_midpoint_amax(qmax, word)` -- a block maximum whose scale `amax / qmax` (binary32
  division) lands on, or one ulp beside, a halfway point of the scale's storage type (f16 for
  Q8_0, G256 and the grouped `.ninfer` formats; bf16 for the fp8 row scale), picked among the
  values where `amax / qmax` and `amax * (1 / qmax)` differ, so a reciprocal-multiply scale is
  caught;
* `blocks_with_amax` -- a matrix whose every block has one such maximum, the other elements at
  exact `k + 1/2` quotients of a power-of-two scale or anywhere below the maximum.

The midpoints are computed with NumPy's float16 and ml_dtypes' bfloat16 (independent of the codecs
under test), and each strategy is a plain function of drawn integers, so Hypothesis shrinks it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

F32 = np.float32


def _f32(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def _bits(x: float) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f16_value(word: int) -> float:
    return float(np.array([word], dtype=np.uint16).view(np.float16)[0])


def bf16_value(word: int) -> float:
    return float(np.array([word], dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)[0])


def f16_midpoint(word: int) -> float:
    """The float32 exactly halfway between f16 `word` (positive, finite, < 0x7BFF) and the next
    one up; f32 holds it exactly (it needs 12 significant bits)."""
    lo, hi = f16_value(word), f16_value(word + 1)
    mid = F32(lo) + (F32(hi) - F32(lo)) / F32(2)
    assert float(mid) * 2 == lo + hi
    return float(mid)


def bf16_midpoint(word: int) -> float:
    """The float32 halfway above bf16 `word` (positive, finite): low half 0x8000."""
    return _f32((word << 16) | 0x8000)


def _nudged(draw: st.DrawFn, x: float) -> float:
    """x itself most of the time, else one float32 ulp below or above."""
    step = draw(st.sampled_from([0, 0, 0, -1, 1]))
    return _f32(_bits(x) + step) if x != 0 or step > 0 else x


@st.composite
def f16_ties(draw: st.DrawFn, subnormal: bool | None = None) -> float:
    """A float32 on (or one ulp beside) an f16 halfway point, of either sign; `subnormal`:
    only below 2^-14 (True), only normal (False), or either."""
    if subnormal is None:
        subnormal = draw(st.booleans())
    word = draw(st.integers(0, 0x03FF) if subnormal else st.integers(0x0400, 0x7BFE))
    x = _nudged(draw, f16_midpoint(word))
    return -x if draw(st.booleans()) else x


@st.composite
def bf16_ties(draw: st.DrawFn) -> float:
    """A float32 whose low 16 bits are 0x8000 (a bf16 tie), 0x7FFF or 0x8001, either sign, any
    finite exponent including subnormals."""
    word = draw(st.integers(0, 0x7F7E))
    low = draw(st.sampled_from([0x8000, 0x8000, 0x7FFF, 0x8001]))
    x = _f32((word << 16) | low)
    return -x if draw(st.booleans()) else x


def _word(x: np.float32, word: str) -> int:
    a = np.array([x], dtype=np.float32)
    return int(
        (a.astype(np.float16) if word == "f16" else a.astype(ml_dtypes.bfloat16)).view(np.uint16)[0]
    )


def _scale_candidates(qmax: int, mid: float, ties_first: bool, word: str = "f16") -> list[float]:
    """Block maxima near `mid * qmax` whose scale `amax / qmax` is within a few ulps of `mid`:
    nearest first (`ties_first`; k = 0 is an exact tie when mid·qmax is exact), else first those
    where the division and the reciprocal multiply `amax * (1 / qmax)` round to different words
    (then those where they differ at all)."""
    q = F32(qmax)
    centre = _bits(float(F32(mid) * q))
    found = []
    for k in range(-24, 25):
        amax = np.array([centre + k], dtype=np.uint32).view(np.float32)[0]
        if not np.isfinite(amax) or amax <= 0:
            continue
        div = amax / q
        mul = amax * (F32(1) / q)
        distance = abs(_bits(float(div)) - _bits(mid))
        same_word = _word(div, word) == _word(mul, word)
        key = (distance, div == mul) if ties_first else (same_word, div == mul, distance)
        found.append((key, float(amax)))
    found.sort()
    return [a for _, a in found]


@st.composite
def scale_midpoint_amax(draw: st.DrawFn, qmax: int, word: str = "f16") -> float:
    """A block maximum (positive float32) whose binary32 scale amax/qmax is on or beside a
    halfway point of `word` ("f16" or "bf16") -- preferring maxima where amax/qmax differs from
    amax·(1/qmax)."""
    if word == "f16":  # subnormal scales half of the time: their ties are a separate path
        words = st.one_of(st.integers(0x0001, 0x03FE), st.integers(0x0400, 0x7000))
        mid = f16_midpoint(draw(words))
    else:
        mid = bf16_midpoint(draw(st.integers(0x0080, 0x7E00)))
    candidates = _scale_candidates(qmax, mid, draw(st.booleans()), word)
    return candidates[draw(st.integers(0, min(3, len(candidates) - 1)))]


@st.composite
def blocks_with_amax(
    draw: st.DrawFn, block: int, qmax: int, *, word: str = "f16", max_rows: int = 3,
    max_blocks: int = 3, cols: int | None = None,
) -> np.ndarray:  # fmt: skip
    """A float32 [rows, cols] matrix (cols = blocks·block unless given) whose every block has one
    element of magnitude `scale_midpoint_amax(qmax)` and the rest at exact k+1/2 quotients of a
    power-of-two scale, or uniform below the maximum."""
    rows = draw(st.integers(1, max_rows))
    if cols is None:
        cols = block * draw(st.integers(1, max_blocks))
    x = np.zeros((rows, cols), dtype=np.float32)
    for r in range(rows):
        for b0 in range(0, cols, block):
            n = min(block, cols - b0)
            amax = draw(scale_midpoint_amax(qmax, word))
            kind = draw(st.sampled_from(["halves", "below", "halves_pow2"]))
            if kind == "halves_pow2":  # amax = qmax·2^e: scale 2^e is exact, so are quotients
                e = draw(st.integers(-20, 10))
                amax = float(F32(qmax) * F32(2.0**e))
                ks = draw(st.lists(st.integers(-qmax, qmax - 1), min_size=n, max_size=n))
                vals = [float((F32(k) + F32(0.5)) * F32(2.0**e)) for k in ks]
            elif kind == "halves":  # quotients near k + 1/2 of the block's own scale
                s = F32(amax) / F32(qmax)
                ks = draw(st.lists(st.integers(-qmax, qmax - 1), min_size=n, max_size=n))
                vals = [float((F32(k) + F32(0.5)) * s) for k in ks]
            else:
                vals = draw(st.lists(st.floats(-amax, amax, width=32), min_size=n, max_size=n))
            vals = np.clip(np.array(vals, dtype=np.float32), -F32(amax), F32(amax))
            vals[draw(st.integers(0, n - 1))] = amax if draw(st.booleans()) else -amax
            x[r, b0 : b0 + n] = vals
    return x


@st.composite
def fp8_row_amax(draw: st.DrawFn) -> float:
    """A bf16-representable row maximum whose scale amax/448 (binary32) has its low 16 bits as
    close to the bf16 halfway point 0x8000 as any of 64 neighbouring maxima (spec/ninfer3.md
    §3.7 steps 3-4): truncation and RNE of the scale disagree there."""
    w0 = draw(st.integers(0x0080, 0x7E00))

    def off_tie(w: int) -> int:
        raw = F32(bf16_value(w)) / F32(448)
        return abs((_bits(float(raw)) & 0xFFFF) - 0x8000)

    ranked = sorted(range(w0, w0 + 64), key=off_tie)
    return bf16_value(ranked[draw(st.integers(0, 3))])


def _kestrel_code(x: np.float32, r: np.float32) -> int:
    """trunc(x·r ± 0.5) in binary32 (spec/vqf.md §6.1), to find inputs, not to check codecs."""
    v = F32(x) * r
    return int(np.trunc(v + F32(0.5) if v >= 0 else v - F32(0.5)))


@st.composite
def reciprocal_sensitive_block(draw: st.DrawFn, block: int = 32, qmax: int = 127) -> np.ndarray:
    """A float32 block whose Kestrel codes change when the scale is computed as amax·(1/qmax)
    instead of amax/qmax: its maximum is one where the two binary32 scales differ (found by
    scanning up from a drawn maximum), and other elements sit where x·(1/scale) crosses a
    k + 1/2 boundary between the two scales. Falls back to exact halves when the scan finds none.
    """
    q = F32(qmax)
    start = _bits(float(draw(st.floats(2.0**-10, 2.0**13, width=32))))
    amax = ra = rb = None
    for k in range(4096):
        a = np.array([start + k], dtype=np.uint32).view(np.float32)[0]
        sa, sb = a / q, a * (F32(1) / q)
        if sa != sb and F32(1) / sa != F32(1) / sb:
            amax, ra, rb = a, F32(1) / sa, F32(1) / sb
            break
    out = np.zeros(block, dtype=np.float32)
    if amax is None:
        return out
    out[draw(st.integers(0, block - 1))] = amax
    for i in range(block):
        if out[i]:
            continue
        k = draw(st.integers(0, qmax - 2))
        x0 = _bits(float((F32(k) + F32(0.5)) / ra))
        for j in sorted(range(-16, 17), key=abs):
            x = np.array([x0 + j], dtype=np.uint32).view(np.float32)[0]
            if x <= amax and _kestrel_code(x, ra) != _kestrel_code(x, rb):
                out[i] = x if draw(st.booleans()) else -x
                break
    return out


def f16_oracle(x: np.ndarray) -> np.ndarray:
    """f16 RNE words of float32 values by NumPy (an oracle independent of our codecs)."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def bf16_oracle(x: np.ndarray) -> np.ndarray:
    """bf16 RNE words of float32 values by ml_dtypes (an oracle independent of our codecs)."""
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
