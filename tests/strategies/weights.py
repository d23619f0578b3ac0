"""Weight matrices in every VQF layout the forward pass reads, and activations to multiply them by.

Payloads are built from random logical words (codes and finite f16 scale bits, any sign) with the
legacy block writer of `strategies.model` and the codecs' own tiling, so every layout carries the
same words the reference decodes back (spec/vqf.md §q8-0, §q4i8, §g256, §q8-tiled, §q4-0, §q4-8x8l).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from strategies.model import legacy_block_bytes
from weightfile.fast.codecs.vqf.tiling import tile
from weightfile.fast.numerics import matrix
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.spec.codecs.vqf.registry import CODECS

#: Layouts a forward pass can bind, with their code range (Q4I8 stores Q4 codes in Q8 blocks).
QUANT_LAYOUTS = {
    "q8_0": (-128, 127), "g256": (-128, 127), "q4i8": (-8, 7), "q4_0": (-8, 7),
    "q8_0_8x8": (-128, 127), "q8_0_4x4": (-128, 127), "g256_8x8": (-128, 127),
    "g256_4x4": (-128, 127), "q4_0_4x4": (-8, 7), "q4_0_8x8l": (-8, 7),
}  # fmt: skip
DENSE_LAYOUTS = ("f32", "f16")


def finite_f16_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Any finite binary16 (subnormals, zeros of both signs included)."""
    magnitude = rng.integers(0, 0x7C00, size=shape, dtype=np.uint16)
    return magnitude | (rng.integers(0, 2, size=shape, dtype=np.uint16) << 15)


def quant_words(rng: np.random.Generator, layout: str, rows: int, cols: int) -> QuantMatrix:
    lo, hi = QUANT_LAYOUTS[layout]
    codes = rng.integers(lo, hi + 1, size=(rows, cols), dtype=np.int16).astype(np.int8)
    scales = (0.001 + 0.02 * rng.random((rows, cols // 32))).astype(np.float16).view(np.uint16)
    if rng.random() < 0.5:  # every finite scale, not just plausible ones
        scales = finite_f16_bits(rng, (rows, cols // 32))
    return QuantMatrix(codes, scales)


def quant_payload(layout: str, m: QuantMatrix) -> bytes:
    """The payload of `layout` holding the words of m."""
    c = CODECS[layout]
    legacy = legacy_block_bytes(m, "q4" if c.base == "q4_0" else "q8")
    return tile(layout, legacy, *m.shape) if c.tiling else legacy


@st.composite
def layout_shapes(draw: st.DrawFn, layout: str) -> tuple[int, int]:
    """[rows, cols] with rows a multiple of the layout's row group and cols of 32."""
    group = CODECS[layout].row_group
    rows = group * draw(st.integers(1, 3 if group > 1 else 9))
    cols = 32 * draw(st.integers(1, 4))
    return rows, cols


def activations(rng: np.random.Generator, tokens: int, n: int) -> np.ndarray:
    """float32 [tokens, n] at a random magnitude, with zero blocks and tiny outliers, and in half
    the draws huge ones. Huge outliers overflow most products of a few blocks to inf or NaN, where
    a wrong code, scale or order no longer shows; the other half keeps the outputs finite."""
    x = rng.standard_normal((tokens, n)) * 10.0 ** rng.integers(-6, 6)
    x = x.astype(np.float32)
    mask = rng.random(x.shape)
    huge = (mask < 0.03) & (rng.random() < 0.5)
    x[huge] = np.float32(3e38) * np.sign(x[huge])
    x[(mask > 0.03) & (mask < 0.06)] = np.float32(1e-42)
    if n >= 32 and rng.random() < 0.3:
        x[:, :32] = 0.0
    return x


@st.composite
def quantized_cases(draw: st.DrawFn, layout: str) -> tuple[QuantMatrix, bytes, np.ndarray]:
    """(logical words, the layout's payload holding them, activations float32 [1-3, cols])."""
    rows, cols = draw(layout_shapes(layout))
    tokens = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    words = quant_words(rng, layout, rows, cols)
    return words, quant_payload(layout, words), activations(rng, tokens, cols)


@pytest.fixture(scope="module", autouse=True)
def threads_on_tiny_matrices():
    """Import into a test module to let its tiny matrices really use the threads asked for
    (production skips threads below a work size, which would leave that path untested)."""
    saved = matrix.MIN_ELEMENTS_PER_THREAD
    matrix.MIN_ELEMENTS_PER_THREAD = 1
    yield
    matrix.MIN_ELEMENTS_PER_THREAD = saved
