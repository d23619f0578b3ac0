"""The vectorised numerics of fast against independent oracles (ml_dtypes) and the
spec/ninfer3.md §block-scale formula.

fast rounds E4M3FN on the binary32 bits rather than through ref's midpoint table, so it gets its
own oracle tests over dense and boundary inputs.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from weightfile.fast.codecs.ninfer3.block_scale_k16_m128x4_v1 import swizzle, unswizzle
from weightfile.fast.codecs.ninfer3.contiguous_le_v1 import bf16_rne
from weightfile.fast.codecs.ninfer3.fp8_row_maxabs import e4m3fn_words
from weightfile.fast.codecs.ninfer3.row_scale_v1 import E4M3FN_TABLE
from weightfile.spec.codecs.ninfer3.layouts import block_scale_planes, nvfp4_scale_index


def e4m3fn_oracle(x: np.ndarray) -> np.ndarray:
    return x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


def test_e4m3fn_words_on_dense_float32_words_up_to_448() -> None:
    """All binary32 words from +0 up to 448, strided (and every word below 2^-5): ml_dtypes."""
    top = int(np.float32(448.0).view(np.uint32))
    small = np.arange(0, int(np.float32(2.0**-5).view(np.uint32)), 97, dtype=np.uint32)
    wide = np.arange(0, top + 1, 4093, dtype=np.uint32)
    x = np.concatenate([small, wide, [top]]).astype(np.uint32).view(np.float32)
    assert np.array_equal(e4m3fn_words(x), e4m3fn_oracle(x))


def test_e4m3fn_words_on_every_midpoint_and_its_neighbours() -> None:
    """Ties go to the even word; one ulp either side goes to the nearer word."""
    values = E4M3FN_TABLE[:0x7F].astype(np.float64)
    mid = ((values[:-1] + values[1:]) / 2).astype(np.float32)
    x = np.concatenate([mid, np.nextafter(mid, 0), np.nextafter(mid, 1000)]).astype(np.float32)
    assert np.array_equal(e4m3fn_words(x), e4m3fn_oracle(x))


def test_e4m3fn_table_matches_ml_dtypes() -> None:
    """All 256 words; NaN exactly at 0x7F and 0xFF."""
    oracle = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    nan = np.isnan(oracle)
    assert np.array_equal(np.isnan(E4M3FN_TABLE), nan)
    assert np.array_equal(E4M3FN_TABLE[~nan].view(np.uint32), oracle[~nan].view(np.uint32))


def test_bf16_rne_matches_ml_dtypes_on_a_million_words() -> None:
    """Random and boundary binary32 words, NaNs and infinities included."""
    rng = np.random.default_rng(20261129)
    words = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0xFF800000, 0x00008000, 0x00018000])
    x = np.concatenate([words, edges.astype(np.uint32)]).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(bf16_rne(x), want)


def test_swizzle_is_the_4_4_formula_and_unswizzle_inverts_it() -> None:
    """Every natural scale lands at the formula's byte; unswizzle restores natural order."""
    p = block_scale_planes((256, 192))
    natural = np.arange(256 * 12, dtype=np.int64).reshape(256, 12)
    plane = swizzle(natural, p)
    for n in range(256):
        for g in range(12):
            assert plane[nvfp4_scale_index(n, g, 192)] == natural[n, g]
    assert np.array_equal(unswizzle(plane, p), natural)
