"""The untiled Q4_0 decode kernel (eight rows in lanes, blocks in pairs) equals the reference
bit for bit (spec/numerics.md §q8-activation): single-token products of matrices with at least eight
rows, odd and even block counts, one and three threads, every kernel path usable here
(spec/numerics.md §kernel-paths); compared as uint32 views.

The general product property draws up to nine rows, so it reaches this path only now and then;
this one always does.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.weights import (  # noqa: F401 (threads_on_tiny_matrices is a fixture)
    activations,
    quant_payload,
    quant_words,
    threads_on_tiny_matrices,
)

from weightfile.fast._native import each_isa
from weightfile.fast.numerics.matrix import FastMatrix
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

#: Extreme inputs overflow the reference's float32 arithmetic to inf/NaN, as the contract defines;
#: numpy's warnings about it are expected here (and only here).
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(8, 24),
    blocks=st.integers(1, 6),
)
def test_q4_untiled_single_token_equals_ref(seed: int, rows: int, blocks: int) -> None:
    rng = np.random.default_rng(seed)
    cols = 32 * blocks
    words = quant_words(rng, "q4_0", rows, cols)
    payload = np.frombuffer(quant_payload("q4_0", words), dtype=np.uint8)
    fast = FastMatrix("q4_0", payload, rows, cols, QuantizedMatmul.Q8_ACTIVATION)
    x = activations(rng, 1, cols)
    kernels = kernels_for(CANONICAL.with_quantized_matmul(QuantizedMatmul.Q8_ACTIVATION))
    want = np.array(kernels.matvec(words, list(x[0])), dtype=np.float32)
    for _isa in each_isa():
        for threads in (1, 3):
            got = fast.matmat(x, threads=threads).reshape(rows)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
