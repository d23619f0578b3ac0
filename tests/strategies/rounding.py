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
    §fp8-row-maxabs steps 3-4): truncation and RNE of the scale disagree there."""
    w0 = draw(st.integers(0x0080, 0x7E00))

    def off_tie(w: int) -> int:
        raw = F32(bf16_value(w)) / F32(448)
        return abs((_bits(float(raw)) & 0xFFFF) - 0x8000)

    ranked = sorted(range(w0, w0 + 64), key=off_tie)
    return bf16_value(ranked[draw(st.integers(0, 3))])


def _kestrel_code(x: np.float32, r: np.float32) -> int:
    """trunc(x·r ± 0.5) in binary32 (spec/vqf.md §quant-q8-0), to find inputs, not to check
    codecs."""
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


# --- the cases the surviving mutants of tools/mutations.py needed --------------------------------


@st.composite
def f16_underflow_amax(draw: st.DrawFn, qmax: int) -> float:
    """A positive float32 block maximum whose scale amax/qmax rounds to f16 word 0 (it is at most
    2^-25, the halfway point between 0 and the smallest subnormal 2^-24, which ties to even 0):
    the grouped encoders must then store the rescue word (spec/ninfer3.md §grouped-absmax step 5).
    Half of the time exactly qmax·2^-25, the tie itself."""
    top = F32(qmax) * F32(2.0**-25)  # exact: qmax < 2^24
    if draw(st.booleans()):
        return float(top)
    return _f32(draw(st.integers(1, _bits(float(top)))))


def e4m3fn_value(word: int) -> float:
    """The value of an E4M3FN code word 0x00..0x7E, by ml_dtypes."""
    return float(
        np.array([word], dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)[0]
    )


@st.composite
def e4m3fn_tie_rows(draw: st.DrawFn) -> np.ndarray:
    """A float32 [rows, k] matrix for fp8_e4m3fn_row_bf16 whose row scale is an exact power of
    two (amax = 448·2^e, so the scale is 2^e and 1/scale exact, spec/ninfer3.md
    §fp8-row-maxabs steps 3-5): every other element then normalises to exactly what was drawn -- an
    E4M3FN halfway point between two normal words or two subnormal words (either parity), a
    subnormal value off the grid, or a word itself -- and each value needs at most 5 significant
    bits, so the bf16 rounding of step 1 keeps it."""
    rows, k = draw(st.integers(1, 3)), draw(st.integers(2, 24))
    x = np.zeros((rows, k), np.float32)
    for r in range(rows):
        e = draw(st.integers(-20, 12))
        step = F32(2.0**e)
        x[r, 0] = F32(448) * step * (F32(-1) if draw(st.booleans()) else F32(1))
        for i in range(1, k):
            kind = draw(st.sampled_from(["normal_tie", "normal_tie", "sub_tie", "sub_off", "word"]))
            if kind == "normal_tie":
                w = draw(st.integers(0x08, 0x7D))
                v = (e4m3fn_value(w) + e4m3fn_value(w + 1)) / 2
            elif kind == "sub_tie":  # (2j+1)·2^-10, halfway between subnormal words j and j+1
                v = (2 * draw(st.integers(0, 7)) + 1) * 2.0**-10
            elif kind == "sub_off":  # j·2^-13 below 2^-6: rint and floor of m·2^9 disagree
                v = draw(st.integers(1, 127)) * 2.0**-13
            else:
                v = e4m3fn_value(draw(st.integers(0x00, 0x7E)))
            x[r, draw(st.integers(1, k - 1)) if kind == "word" else i] = (
                F32(v) * step * (F32(-1) if draw(st.booleans()) else F32(1))
            )
        perm = draw(st.permutations(range(k)))
        x[r] = x[r, list(perm)]
    return x


@st.composite
def nan_bits(draw: st.DrawFn) -> int:
    """The bits of a float32 NaN of either sign, quiet or signalling, any payload. Bits, not a
    Python float: float32 -> double -> float32 quiets a signalling NaN on the way."""
    sign = draw(st.sampled_from([0, 0x80000000]))
    payload = draw(st.one_of(st.sampled_from([1, 0x400000, 0x7FFFFF, 0x3FFFFF]),
                             st.integers(1, 0x7FFFFF)))  # fmt: skip
    return sign | 0x7F800000 | payload
