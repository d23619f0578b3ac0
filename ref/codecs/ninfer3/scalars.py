"""Scalar numerics of the `.ninfer` v3 formats, one word or value at a time (spec/ninfer3.md
§formats).

Python floats are binary64. A binary32 operation is written as the exact binary64 operation
followed by one rounding to binary32 (`f32`): products of two binary32 values are exact in
binary64, and for quotients the double rounding is innocuous (53 >= 2·24 + 2), so this equals the
correctly rounded binary32 result the spec asks for. Conversions go through `struct`, whose
binary32 and binary16 packers round to nearest, ties to even.
"""

from __future__ import annotations

import bisect
import itertools
import math
import struct

from weightfile.spec.codecs.ninfer3.formats import E2M1_MAGNITUDES, E4M3FN_BIAS, E4M3FN_MAX_WORD


def f32(x: float) -> float:
    """Round a binary64 value once to binary32 (RNE); overflow gives a signed infinity."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # struct refuses to round a finite value to inf; IEEE gives inf
        return math.copysign(math.inf, x)


def f32_bits(x: float) -> int:
    """The binary32 word of a value that is already exactly a binary32 number."""
    return struct.unpack("<I", struct.pack("<f", f32(x)))[0]


def f32_from_bits(word: int) -> float:
    """The value of a binary32 word (finite words only: NaN payloads do not survive binary64)."""
    return struct.unpack("<f", struct.pack("<I", word))[0]


def f16_rne_word(x: float) -> int | None:
    """Binary16 word nearest to a binary32 value (RNE, subnormals kept), None on overflow."""
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return None


def f16_value(word: int) -> float:
    """Exact binary16 -> binary32 value of a finite word (spec/ninfer3.md §grouped-formats
    `exact_binary16_to_binary32`)."""
    return struct.unpack("<e", struct.pack("<H", word))[0]


def f16_scale_is_valid(word: int) -> bool:
    """+0 or a finite positive normal/subnormal binary16; -0, negatives, inf, NaN are not
    (spec/ninfer3.md §grouped-formats)."""
    sign = word >> 15
    exponent = (word >> 10) & 0x1F
    return sign == 0 and exponent != 0x1F


def bf16_rne_word(bits32: int) -> int:
    """BF16 word of a binary32 word: `(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16`
    (spec/ninfer3.md §fp8-row-maxabs step 4).

    NaN is not covered by the bit rule (it could carry into infinity); it becomes the quiet NaN
    0x7FC0 with the input's sign, as ml_dtypes and torch produce.
    """
    exponent = (bits32 >> 23) & 0xFF
    fraction = bits32 & 0x7FFFFF
    if exponent == 0xFF and fraction != 0:
        return (bits32 >> 16) & 0x8000 | 0x7FC0
    return (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16


def bf16_value(word: int) -> float:
    """The value of a BF16 word: the binary32 word `word << 16` (spec/ninfer3.md
    §direct-formats)."""
    return f32_from_bits(word << 16)


def bf16_scale_is_valid(word: int) -> bool:
    """Sign bit clear and exponent bits != 0xFF; +0 and subnormals allowed
    (spec/ninfer3.md §fp8-row)."""
    return word >> 15 == 0 and (word >> 7) & 0xFF != 0xFF


def e4m3fn_value(word: int) -> float:
    """The value of an E4M3FN word, case by case as spec/ninfer3.md §nvfp4 lists them (0x7F/0xFF
    give NaN)."""
    sign = -1.0 if word & 0x80 else 1.0
    e = (word >> 3) & 0xF
    m = word & 0x7
    if e == 0:
        return sign * m * 2.0**-9
    if e == 15 and m == 7:
        return math.nan
    return sign * (1 + m / 8) * 2.0 ** (e - E4M3FN_BIAS)


#: E4M3FN magnitudes of words 0x00..0x7E, increasing with the word (spec/ninfer3.md §e4m3fn-table).
E4M3FN_POSITIVE: tuple[float, ...] = tuple(e4m3fn_value(w) for w in range(E4M3FN_MAX_WORD + 1))

#: Midpoints between neighbouring magnitudes; exact binary64 dyadics.
_E4M3FN_MIDPOINTS: tuple[float, ...] = tuple(
    (a + b) / 2 for a, b in itertools.pairwise(E4M3FN_POSITIVE)
)


def e4m3fn_nearest_word(magnitude: float) -> int:
    """Nearest word in 0x00..0x7E to `0 <= magnitude <= 448`; a tie picks the even word
    (spec/ninfer3.md §fp8-row-maxabs/7)."""
    below = bisect.bisect_left(_E4M3FN_MIDPOINTS, magnitude)  # midpoints strictly below
    if below < len(_E4M3FN_MIDPOINTS) and _E4M3FN_MIDPOINTS[below] == magnitude:
        return below if below % 2 == 0 else below + 1  # on the midpoint of words below, below+1
    return below


def e4m3fn_scale_is_valid(word: int) -> bool:
    """An nvfp4 block scale has its sign bit clear and is not 0x7F (spec/ninfer3.md §nvfp4)."""
    return word & 0x80 == 0 and word != 0x7F


def e2m1_value(word: int) -> float:
    """The value of an E2M1 word: the spec/ninfer3.md §nvfp4 table, words 8..15 negated (0x8 is
    -0)."""
    magnitude = E2M1_MAGNITUDES[word & 0x7]
    return -magnitude if word & 0x8 else magnitude


def round_half_even(x: float) -> int:
    """Nearest integer, ties to even (Python's `round` on a float)."""
    return round(x)


def twos_complement(u: int, bits: int) -> int:
    """`q = u` if `u < 2^(b-1)`, else `u - 2^b` (spec/ninfer3.md §grouped-formats Codes)."""
    return u - (1 << bits) if u >= 1 << (bits - 1) else u
