"""fast.numerics.matrix products equal the reference kernels' bits (spec/numerics.md §dot,
§quantized-matmul).

Every layout the forward pass reads, both quantized modes (spec/numerics.md §q8-activation
q8_activation, spec/numerics.md §f32-weights f32_weights), one and several tokens, one and three
threads, every kernel path usable here (spec/numerics.md §kernel-paths); compared as uint32 views.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies.weights import (  # noqa: F401 (threads_on_tiny_matrices is a fixture)
    DENSE_LAYOUTS,
    QUANT_LAYOUTS,
    activations,
    quant_payload,
    quant_words,
    quantized_cases,
    threads_on_tiny_matrices,
)

from weightfile.fast._native import each_isa
from weightfile.fast.numerics.matrix import FastMatrix, matmat_codes_set, quantize_activation
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.spec.codecs.vqf.registry import CODECS
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

#: Extreme inputs overflow the reference's float32 arithmetic to inf/NaN, as the contract defines;
#: numpy's warnings about it are expected here (and only here).
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)


MODES = list(QuantizedMatmul)


def ref_product(m, x: np.ndarray, mode: QuantizedMatmul) -> np.ndarray:
    k = kernels_for(CANONICAL.with_quantized_matmul(mode))
    return np.array([k.matvec(m, list(row)) for row in x], dtype=np.float32).reshape(
        len(x), m.shape[0]
    )


def canonical_bits(a: np.ndarray) -> np.ndarray:
    """The uint32 words with every NaN as 0x7FC00000: NaN payload and sign are not specified
    (spec/numerics.md §special-values), and a NaN block can meet an inf - inf NaN of the other
    sign."""
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32))


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(canonical_bits(got), canonical_bits(want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", sorted(QUANT_LAYOUTS))
@settings(max_examples=6)
@given(data=st.data())
def test_quantized_product_equals_ref(layout: str, mode, data) -> None:
    words, raw, x = data.draw(quantized_cases(layout))
    rows, cols = words.shape
    payload = np.frombuffer(raw, dtype=np.uint8)
    fast = FastMatrix(layout, payload, rows, cols, mode)
    want = ref_product(words, x, mode)
    for _isa in each_isa():
        for threads in (1, 3):
            assert_same_bits(fast.matmat(x, threads=threads), want)
        assert_same_bits(fast.matvec(x[0]), want[:1].reshape(rows))


@pytest.mark.parametrize("layout", DENSE_LAYOUTS)
@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 9),
    cols=st.integers(1, 70),
    tokens=st.integers(1, 3),
)
def test_dense_product_equals_ref(layout: str, seed: int, rows: int, cols: int, tokens: int):
    rng = np.random.default_rng(seed)
    if layout == "f16":
        bits = rng.integers(0, 0x7C00, size=(rows, cols), dtype=np.uint16)
        bits |= rng.integers(0, 2, size=(rows, cols), dtype=np.uint16) << 15
        values = bits.view(np.float16).astype(np.float32)
        raw = bits.astype("<u2").tobytes()
    else:
        values = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
        raw = values.astype("<f4").tobytes()
    x = activations(rng, tokens, cols)
    fast = FastMatrix(layout, np.frombuffer(raw, dtype=np.uint8), rows, cols)
    want = ref_product(DenseMatrix(values), x, QuantizedMatmul.Q8_ACTIVATION)
    for _isa in each_isa():
        for threads in (1, 3):
            assert_same_bits(fast.matmat(x, threads=threads), want)


@settings(max_examples=20)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 13),
    cols=st.sampled_from([1, 7, 8, 9, 16, 31, 64, 70, 72]),
    tokens=st.sampled_from([1, 2, 5, 6, 7, 12, 13, 14, 15, 27]),
    wide=st.booleans(),
)
def test_f32_register_tiles_equal_ref(seed, rows, cols, tokens, wide):
    """fast/csrc/f32_x86.c: bands of 4 rows with the rows past the last band left to the loop,
    token tiles of 2 (AVX2) or of 6 token pairs packed two to a 512-bit register (AVX-512) with
    the pairs past the last tile one pair at a time and an odd last token alone, columns past
    the last multiple of 8 added to the same lanes (with none past it, a pair's two trees combined
    in the register); with `wide`, rows long enough that a token
    span (256 KiB) holds fewer tokens than the product (several spans, the last one short)."""
    rng = np.random.default_rng(seed)
    cols = 20_000 + cols if wide else cols
    values = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    values[rng.random((rows, cols)) < 0.05] = -0.0
    x = activations(rng, tokens, cols)
    fast = FastMatrix("f32", np.frombuffer(values.astype("<f4").tobytes(), np.uint8), rows, cols)
    want = ref_product(DenseMatrix(values), x, QuantizedMatmul.Q8_ACTIVATION)
    for _isa in each_isa():
        for threads in (1, 2):
            assert_same_bits(fast.matmat(x, threads=threads), want)


def test_a_changed_code_changes_the_product() -> None:
    """The comparison can fail: one code off gives different bits."""
    rng = np.random.default_rng(7)
    words = quant_words(rng, "q8_0", 8, 64)
    words.scale_bits[:] = np.float16(0.01).view(np.uint16)
    payload = bytearray(quant_payload("q8_0", words))
    x = np.linspace(1.0, 2.0, 64, dtype=np.float32)
    before = FastMatrix("q8_0", np.frombuffer(bytes(payload), np.uint8), 8, 64).matvec(x)
    payload[2] ^= 0x01  # row 0, block 0, code 0
    after = FastMatrix("q8_0", np.frombuffer(bytes(payload), np.uint8), 8, 64).matvec(x)
    assert before[0] != after[0] and (before[1:] == after[1:]).all()


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**32 - 1),
    layouts=st.lists(st.sampled_from(sorted(QUANT_LAYOUTS)), min_size=1, max_size=3),
    cols=st.integers(1, 4).map(lambda b: 32 * b),
    tokens=st.integers(1, 3),
)
def test_matrix_set_equals_ref_per_matrix(seed: int, layouts, cols: int, tokens: int) -> None:
    """matmat_codes_set (one C call over the union of the rows, as q/k/v and gate/up run) gives
    each matrix the reference's product; row groups of mixed sizes meet inside pool chunks."""
    rng = np.random.default_rng(seed)
    words = [
        quant_words(rng, lay, CODECS[lay].row_group * int(rng.integers(1, 4)), cols)
        for lay in layouts
    ]
    mats = [
        FastMatrix(lay, np.frombuffer(quant_payload(lay, w), dtype=np.uint8), *w.shape)
        for lay, w in zip(layouts, words, strict=True)
    ]
    x = activations(rng, tokens, cols)
    want = [ref_product(w, x, QuantizedMatmul.Q8_ACTIVATION) for w in words]
    for _isa in each_isa():
        for threads in (1, 3):
            got = matmat_codes_set(mats, *quantize_activation(x), threads=threads)
            for g, w in zip(got, want, strict=True):
                assert_same_bits(g, w)


@settings(max_examples=8)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(["q4_0_4x4", "q8_0_8x8"]),
    groups=st.integers(1, 3),
    blocks=st.integers(1, 3),
    tokens=st.sampled_from([2, 5, 64, 67]),
)
def test_token_tiles_equal_ref(seed: int, layout: str, groups: int, blocks: int, tokens: int):
    """The prefill tiles (a row group x every token, weights unpacked once per block; past 64
    tokens their accumulators move to the heap) give each token the reference's product."""
    rng = np.random.default_rng(seed)
    words = quant_words(rng, layout, CODECS[layout].row_group * groups, 32 * blocks)
    fast = FastMatrix(layout, np.frombuffer(quant_payload(layout, words), np.uint8), *words.shape)
    x = activations(rng, tokens, words.shape[1])
    want = ref_product(words, x, QuantizedMatmul.Q8_ACTIVATION)
    for _isa in each_isa():
        for threads in (1, 3):
            assert_same_bits(fast.matmat(x, threads=threads), want)


#: The layouts the blocked prefill product (fast/csrc/gemm_x86.c) tiles as 8 rows x 3 tokens.
GEMM_LAYOUTS = ["q4_0_4x4", "q8_0_8x8", "q8_0_4x4", "g256_4x4", "q4_0_8x8l", "q4_0", "q8_0"]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(GEMM_LAYOUTS),
    row_groups=st.integers(1, 6),
    blocks=st.integers(1, 4),
    tokens=st.integers(1, 8),
    threads=st.integers(1, 3),
)
def test_gemm_tiles_equal_ref(
    seed: int, layout: str, row_groups: int, blocks: int, tokens: int, threads: int
) -> None:
    """The blocked product gives every token the reference's bits for every token remainder of
    its tiles (1..8 tokens: full tiles of 3 and 1 or 2 left), for bands of 8 rows with 4 (Q4_0
    4x4, untiled) or fewer rows left to the row-group kernels, on every kernel path here and any
    thread count (the pool's chunks start on multiples of 8 rows)."""
    rng = np.random.default_rng(seed)
    tiled = CODECS[layout].tiling is not None
    rows = CODECS[layout].row_group * row_groups if tiled else 3 * row_groups + 1
    words = quant_words(rng, layout, rows, 32 * blocks)
    fast = FastMatrix(layout, np.frombuffer(quant_payload(layout, words), np.uint8), *words.shape)
    x = activations(rng, tokens, words.shape[1])
    want = ref_product(words, x, QuantizedMatmul.Q8_ACTIVATION)
    for _isa in each_isa():
        assert_same_bits(fast.matmat(x, threads=threads), want)


def test_gemm_tile_sees_every_code() -> None:
    """The comparison can fail inside a tile: one code of row 5 (lane 5 of an 8-row band), block
    1, changed in the payload changes row 5 of every token and nothing else."""
    rng = np.random.default_rng(11)
    x = np.linspace(1.0, 2.0, 4 * 64, dtype=np.float32).reshape(4, 64)
    for layout in GEMM_LAYOUTS:
        words = quant_words(rng, layout, 8, 64)
        words.scale_bits[:] = np.float16(0.01).view(np.uint16)
        changed = QuantMatrix(words.codes.copy(), words.scale_bits.copy())
        changed.codes[5, 40] ^= 1  # stays inside the layout's code range
        a, b = (
            FastMatrix(layout, np.frombuffer(quant_payload(layout, w), np.uint8), 8, 64).matmat(x)
            for w in (words, changed)
        )
        diff = a.view(np.uint32) != b.view(np.uint32)
        assert diff[:, 5].all() and not np.delete(diff, 5, axis=1).any(), layout


@pytest.mark.parametrize("layout", ["q4_0_4x4", "q8_0"])  # the spans do not depend on the layout
def test_gemm_token_spans_equal_ref(layout: str) -> None:
    """At 4096 columns the blocked product takes the tokens in spans of 63 (their codes fit its
    256 KiB cache share): 65 tokens end on a 2-token tile in the second span, and every token
    still gets the reference's bits. Finite activations: `activations`' outliers would make
    nearly every output of 4096 columns NaN, and NaN equals NaN here whatever the span did."""
    rng = np.random.default_rng(5)
    words = quant_words(rng, layout, 8 if CODECS[layout].tiling else 9, 4096)
    fast = FastMatrix(layout, np.frombuffer(quant_payload(layout, words), np.uint8), *words.shape)
    x = rng.standard_normal((65, 4096)).astype(np.float32)
    want = ref_product(words, x, QuantizedMatmul.Q8_ACTIVATION)
    assert np.isfinite(want).all()
    for _isa in each_isa():
        assert_same_bits(fast.matmat(x, threads=2), want)


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(GEMM_LAYOUTS),
    tokens=st.integers(129, 160),
    threads=st.sampled_from([2, 3]),
)
def test_a_long_prompt_splits_its_block_sums_on_the_pool(
    seed: int, layout: str, tokens: int, threads: int
) -> None:
    """From 4096 activation blocks (128 tokens at 1024 columns) the x86 kernels' per-block code
    sums are computed once per call on the pool, each chunk at its own offset: finite activations
    (a NaN anywhere would make every output NaN and hide a wrong sum), every kernel path."""
    rng = np.random.default_rng(seed)
    rows = 8 if CODECS[layout].tiling else 9
    words = quant_words(rng, layout, rows, 1024)
    fast = FastMatrix(layout, np.frombuffer(quant_payload(layout, words), np.uint8), rows, 1024)
    x = (rng.standard_normal((tokens, 1024)) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    want = ref_product(words, x, QuantizedMatmul.Q8_ACTIVATION)
    assert np.isfinite(want).all()
    for _isa in each_isa():
        assert_same_bits(fast.matmat(x, threads=threads), want)


def wide_band_examples(f: Callable[..., None]) -> Callable[..., None]:
    """Every layout at 1 and 9 tokens with a band of 16 and leftover rows, whatever Hypothesis
    draws (the untiled leftover of 9 rows is an 8-row band and one row)."""
    for layout in GEMM_LAYOUTS:
        for tokens in (1, 9):
            f = example(
                7, layout, 1, 1 if CODECS[layout].row_group > 1 else 9, 2, tokens, 1, False
            )(f)
    return f


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(GEMM_LAYOUTS),
    bands=st.integers(1, 2),
    extra=st.integers(0, 15),
    blocks=st.integers(1, 3),
    tokens=st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 17]),
    threads=st.integers(1, 2),
    nan_blocks=st.booleans(),
)
@wide_band_examples
def test_wide_bands_equal_ref(
    seed: int,
    layout: str,
    bands: int,
    extra: int,
    blocks: int,
    tokens: int,
    threads: int,
    nan_blocks: bool,
) -> None:
    """The AVX-512 kernels (fast/csrc/qmatvec_avx512.c) take bands of 16 rows (decode on an
    untiled payload: 8; prefill ends an untiled run with a band of 8 when 8 rows are left) and
    tiles of 8 tokens; the rows after the last band go to the AVX2 kernels. Bands of 16 with
    leftover rows (up to 3 row groups of a tiled payload, up to 15 rows of an untiled one), decode
    (1 token) and every token remainder of the tiles, activations with NaN blocks (their scale is
    NaN, so NaN reaches the float steps): every path here gives the reference's bits
    (spec/numerics.md §q8-activation, §kernel-paths)."""
    rng = np.random.default_rng(seed)
    group = CODECS[layout].row_group
    rows = 16 * bands + (group * (extra % 4) if group > 1 else extra)
    words = quant_words(rng, layout, rows, 32 * blocks)
    fast = FastMatrix(layout, np.frombuffer(quant_payload(layout, words), np.uint8), *words.shape)
    x = activations(rng, tokens, words.shape[1])
    if nan_blocks:
        x[rng.integers(0, tokens), rng.integers(0, words.shape[1])] = np.nan
    want = ref_product(words, x, QuantizedMatmul.Q8_ACTIVATION)
    for _isa in each_isa():
        assert_same_bits(fast.matmat(x, threads=threads), want)
