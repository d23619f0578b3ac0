"""fast refuses non-finite quantiser input as ref does (class, rule, path), on both paths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_vqf import same_outcome, shapes

from weightfile.fast.codecs.vqf import codec as fast_codec
from weightfile.ref.codecs.vqf import codec as ref_codec

QUANTISERS = ["q8_0", "q4_0", "q4i8", "g256", "q8_0_8x8", "q4_0_4x4", "q4_0_8x8l", "g256_8x8"]


@pytest.mark.parametrize("name", QUANTISERS)
@given(data=st.data())
def test_non_finite_input_is_refused_identically(name: str, data: st.DataObject) -> None:
    rows, cols = data.draw(shapes(name).filter(lambda s: s[0] * s[1] > 0))
    x = np.zeros((rows, cols), np.float32)
    for _ in range(data.draw(st.integers(1, 3))):
        r, c = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
        x[r, c] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    same_outcome(
        lambda: fast_codec(name).encode(x, rows, cols),
        lambda: ref_codec(name).encode(x, rows, cols),
        34,
    )
