"""fast quantize_activation equals the reference's spec/numerics.md §q8-activation steps 1-2 bit for
bit, on every kernel path usable here (spec/numerics.md §kernel-paths): the AVX2 blocks
(fast/csrc/qmatvec_x86.c) and the scalar loop they hand NaN blocks to. Codes compared as int8,
scales as uint32 views."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast._native import each_isa
from weightfile.fast.numerics.matrix import quantize_activation
from weightfile.ref.numerics.quant import quantize_activation as ref_quantize


def ref_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, scales = zip(*(ref_quantize(list(row)) for row in x), strict=True)
    return (
        np.array([np.concatenate(c) for c in codes], dtype=np.int8).reshape(x.shape),
        np.array(scales, dtype=np.float32).reshape(x.shape[0], -1),
    )


@st.composite
def hard_activations(draw: st.DrawFn) -> np.ndarray:
    """[1-3, 32·(1-4)] float32: random bit patterns (NaN, ±Inf, subnormals, -0 among them), or
    Gaussian blocks at any magnitude with some elements set to exact midpoints k + 1/2 of their
    block's scale d (ties to even decide the code) or to NaN."""
    tokens, blocks = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (tokens, 32 * blocks)
    if draw(st.booleans()):
        bits = rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
        return bits.view(np.float32)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 38)).astype(np.float32)
    for t in range(tokens):
        for b in range(blocks):
            block = x[t, 32 * b : 32 * (b + 1)]
            d = np.float32(np.abs(block).max()) / np.float32(127)
            k = rng.integers(-126, 126, size=4)
            block[rng.integers(0, 32, size=4)] = ((k + 0.5) * d).astype(np.float32)
            if rng.random() < 0.1:
                block[rng.integers(0, 32)] = np.float32("nan")
    return x


@settings(max_examples=80, deadline=None)
@given(x=hard_activations())
def test_quantize_activation_equals_ref(x: np.ndarray) -> None:
    want_codes, want_scales = ref_rows(x)
    for _isa in each_isa():
        codes, scales = quantize_activation(x)
        np.testing.assert_array_equal(codes, want_codes)
        np.testing.assert_array_equal(scales.view(np.uint32), want_scales.view(np.uint32))


def test_a_midpoint_rounds_to_even() -> None:
    """The comparison can fail: x = 2.5·d must give code 2 (ties to even), not 3."""
    x = np.zeros((1, 32), dtype=np.float32)
    x[0, 0] = 127.0  # d = 1
    x[0, 1], x[0, 2] = 2.5, -3.5
    for _isa in each_isa():
        codes, scales = quantize_activation(x)
        assert scales[0, 0] == 1.0 and list(codes[0, :3]) == [127, 2, -4]
