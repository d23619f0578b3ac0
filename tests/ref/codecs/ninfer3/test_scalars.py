"""The scalar numerics of ref against independent oracles: ml_dtypes for BF16, E4M3FN and E2M1,
numpy's float16 for binary16 (spec/ninfer3.md §direct-formats, §nvfp4, §fp8-row-maxabs,
§e4m3fn-table).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.codecs.ninfer3 import scalars


def test_e4m3fn_value_of_all_256_words_matches_ml_dtypes() -> None:
    """spec/ninfer3.md §nvfp4 / §e4m3fn-table table; 0x7F and 0xFF are NaN."""
    oracle = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    for word in range(256):
        got = scalars.e4m3fn_value(word)
        if word & 0x7F == 0x7F:
            assert math.isnan(got) and math.isnan(oracle[word])
        else:
            assert got == oracle[word] and math.copysign(1, got) == math.copysign(1, oracle[word])


def test_e4m3fn_table_landmarks() -> None:
    """Max 448 (0x7E), smallest subnormal 2^-9 (0x01), smallest normal 2^-6 (0x08)."""
    assert scalars.e4m3fn_value(0x7E) == 448.0
    assert scalars.e4m3fn_value(0x01) == 2.0**-9
    assert scalars.e4m3fn_value(0x08) == 2.0**-6


@given(st.floats(min_value=0.0, max_value=448.0, width=32))
def test_e4m3fn_nearest_word_matches_ml_dtypes(magnitude: float) -> None:
    """spec/ninfer3.md §fp8-row-maxabs step 7 (nearest, ties to the even word) equals the ml_dtypes
    cast on [0, 448]."""
    want = int(np.array(magnitude, np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert scalars.e4m3fn_nearest_word(magnitude) == want


def test_e4m3fn_nearest_word_on_every_midpoint() -> None:
    """Every tie between neighbouring words goes to the even word, as ml_dtypes does."""
    values = scalars.E4M3FN_POSITIVE
    for w in range(len(values) - 1):
        mid = (values[w] + values[w + 1]) / 2
        want = w if w % 2 == 0 else w + 1
        assert scalars.e4m3fn_nearest_word(mid) == want
        assert int(np.array(mid, np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)) == want


def test_e2m1_values_match_ml_dtypes() -> None:
    """spec/ninfer3.md §nvfp4 table; 0x8 is −0."""
    oracle = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    for word in range(16):
        got = scalars.e2m1_value(word)
        assert got == oracle[word] and math.copysign(1, got) == math.copysign(1, oracle[word])


@given(st.integers(0, 2**32 - 1))
def test_bf16_rne_word_matches_ml_dtypes(bits: int) -> None:
    """The spec/ninfer3.md §fp8-row-maxabs bit rule (plus the NaN case) equals the ml_dtypes
    bfloat16 cast."""
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = int(x.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert scalars.bf16_rne_word(bits) == want


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_f16_rne_word_matches_numpy_float16(x: float) -> None:
    """binary32 -> binary16 RNE with subnormals; overflow is None where numpy gives inf."""
    with np.errstate(over="ignore"):
        want = int(np.float16(np.float32(x)).view(np.uint16))
    got = scalars.f16_rne_word(x)
    assert got == (None if want & 0x7FFF == 0x7C00 else want)


@given(st.floats(width=32), st.floats(width=32))
def test_f32_of_binary64_product_is_numpy_float32_product(a: float, b: float) -> None:
    """`f32(a × b)` in binary64 equals the correctly rounded binary32 product (numpy)."""
    with np.errstate(all="ignore"):
        want = np.float32(a) * np.float32(b)
    got = scalars.f32(a * b)
    assert (math.isnan(got) and np.isnan(want)) or got == want
