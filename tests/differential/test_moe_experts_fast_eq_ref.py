"""The MoE expert kernels equal the reference bit for bit (spec/models.md §qwen3-moe-forward;
spec/vqf.md §text-tensors; spec/numerics.md §q8-activation).

Two kernels of fast/csrc/moe.c and the row-group stride of wf_matrix: an expert's down column
band read in place from the stacked [d, E·Ie] payload (no gather copy), and one layer's chosen
experts (gate/up, SwiGLU, down, the weighted combine) in one C call. The reference is the
product of the sliced logical words (`ref.numerics.kernels`) and `ref.layers.moe.combine` over
`ref.layers.swiglu.swiglu_ffn`. Words reach the extremes on purpose (codes at both ends of their
range, the largest, smallest-subnormal and zero f16 scales), activations hold quantizer ties
(x = (k + 1/2)·d exactly) and huge or tiny outliers; every kernel path here, 1 and 3 threads,
enough rows and tokens for the AVX-512 bands and the prefill tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies.weights import (  # noqa: F401 (threads_on_tiny_matrices is a fixture)
    QUANT_LAYOUTS,
    activations,
    quant_payload,
    quant_words,
    threads_on_tiny_matrices,
)

from weightfile.fast._native import each_isa
from weightfile.fast.numerics.matrix import FastMatrix
from weightfile.fast.qwen3_moe.bind import ExpertStack
from weightfile.fast.qwen3_moe.experts import experts_of
from weightfile.ref.layers.moe import combine
from weightfile.ref.layers.swiglu import swiglu_ffn
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_moe.bands import col_band, col_band_view
from weightfile.spec.codecs.vqf.registry import CODECS
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)

LAYOUTS = sorted(QUANT_LAYOUTS)


def extreme_words(rng: np.random.Generator, layout: str, rows: int, cols: int) -> QuantMatrix:
    """Random words with about a quarter of the codes at the ends of the layout's range and a
    quarter of the scales the largest finite, the smallest subnormal or a zero f16."""
    w = quant_words(rng, layout, rows, cols)
    lo, hi = QUANT_LAYOUTS[layout]
    pick = rng.random(w.codes.shape)
    w.codes[pick < 0.12] = lo
    w.codes[(pick >= 0.12) & (pick < 0.25)] = hi
    pick = rng.random(w.scale_bits.shape)
    w.scale_bits[pick < 0.1] = 0x7BFF  # 65504
    w.scale_bits[(pick >= 0.1) & (pick < 0.2)] = 0x0001  # 2^-24
    w.scale_bits[(pick >= 0.2) & (pick < 0.25)] = 0x8000  # -0
    return w


def tied_activations(rng: np.random.Generator, tokens: int, n: int) -> np.ndarray:
    """`activations` with one block in three made of quantizer ties: amax 127 (so d = 1) and
    every other element k + 1/2, which rint must send to the even neighbour."""
    x = activations(rng, tokens, n)
    for t in range(tokens):
        for b in range(0, n, 96):
            half = rng.integers(-126, 126, size=32).astype(np.float32) + np.float32(0.5)
            half[0] = 127.0 if rng.random() < 0.5 else -127.0
            x[t, b : b + 32] = half
    return x


def ref_product(m: QuantMatrix, x: np.ndarray, mode: QuantizedMatmul) -> np.ndarray:
    k = kernels_for(CANONICAL.with_quantized_matmul(mode))
    return np.array([k.matvec(m, list(row)) for row in x], dtype=np.float32).reshape(len(x), -1)


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """uint32 views equal, every NaN as one word (spec/numerics.md §special-values)."""
    canon = [np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32)) for a in (got, want)]
    assert got.shape == want.shape
    np.testing.assert_array_equal(*canon)


def band_words(w: QuantMatrix, lo: int, hi: int) -> QuantMatrix:
    return QuantMatrix(
        np.ascontiguousarray(w.codes[:, lo:hi]),
        np.ascontiguousarray(w.scale_bits[:, lo // 32 : hi // 32]),
    )


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(LAYOUTS),
    groups=st.integers(1, 5),
    experts=st.integers(2, 4),
    width_blocks=st.integers(1, 3),
    tokens=st.sampled_from([1, 2, 4, 7]),
    mode=st.sampled_from(list(QuantizedMatmul)),
)
def test_down_band_in_place_equals_ref(
    seed: int, layout: str, groups: int, experts: int, width_blocks: int, tokens: int, mode
) -> None:
    """Expert e's columns of a stacked payload, read in place with the row-group stride, give
    the reference's product of the sliced words, for every expert (first, middle and last band)
    and the whole-stride edge case of a band as wide as the matrix."""
    rng = np.random.default_rng(seed)
    g = CODECS[layout].row_group
    rows = g * groups * (4 if g == 1 else 1) * 2  # 16-row AVX-512 bands with rows left over
    width = 32 * width_blocks
    words = extreme_words(rng, layout, rows, experts * width)
    payload = np.frombuffer(quant_payload(layout, words), dtype=np.uint8)
    x = tied_activations(rng, tokens, width)
    for e in range(experts):
        lo, hi = e * width, (e + 1) * width
        view, stride = col_band_view(layout, payload, rows, experts * width, lo, hi)
        copy = col_band(layout, payload, rows, experts * width, lo, hi)
        assert view.base is not None and np.shares_memory(view, payload)
        fast = FastMatrix(layout, view, rows, width, mode, stride)
        want = ref_product(band_words(words, lo, hi), x, mode)
        same_bits(FastMatrix(layout, copy, rows, width, mode).matmat(x), want)
        for _isa in each_isa():
            for threads in (1, 3):
                same_bits(fast.matmat(x, threads=threads), want)


@dataclass(frozen=True)
class Expert:
    gate: QuantMatrix
    up: QuantMatrix
    down: QuantMatrix


def routes_with_ties(rng: np.random.Generator, tokens: int, experts: int, k: int) -> list:
    """Per token k distinct experts ascending with float32 weights; equal weights (a tie) and
    an expert chosen by every token on purpose."""
    out = []
    for _ in range(tokens):
        chosen = sorted({0, *rng.choice(experts, size=k - 1, replace=False).tolist()})[:k]
        while len(chosen) < k:
            chosen = sorted({*chosen, int(rng.integers(experts))})
        ws = rng.random(k).astype(np.float32) if rng.random() < 0.5 else np.full(k, 1 / k)
        out.append([(e, np.float32(w)) for e, w in zip(chosen, ws, strict=True)])
    return out


def one_token_examples(f: Callable[..., None]) -> Callable[..., None]:
    """Every layout with one token on 1 and 3 threads, whatever Hypothesis draws: a decode step,
    whose chosen experts run as two pool calls (moe.c's one_token: every gate / up band in one
    set, every down band on its own expert's codes in another)."""
    for layout in LAYOUTS:
        for threads in (1, 3):
            f = example(7, layout, 5, 1, QuantizedMatmul.Q8_ACTIVATION, threads)(f)
    return f


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(LAYOUTS),
    experts=st.integers(2, 5),
    tokens=st.integers(1, 6),
    mode=st.sampled_from(list(QuantizedMatmul)),
    threads=st.sampled_from([1, 3]),
)
@one_token_examples
def test_layer_experts_in_one_call_equal_ref(
    seed: int, layout: str, experts: int, tokens: int, mode, threads: int
) -> None:
    """wf_moe_experts (every chosen expert of a layer, one call) gives each token the
    reference's combine of its experts' SwiGLU FFNs, bit for bit."""
    rng = np.random.default_rng(seed)
    g = CODECS[layout].row_group
    d, width, k = 32 * int(rng.integers(1, 3)), 32 * int(rng.integers(1, 3)), min(2, experts)
    assert d % g == 0
    gate = extreme_words(rng, layout, experts * width, d)
    up = extreme_words(rng, layout, experts * width, d)
    down = extreme_words(rng, layout, d, experts * width)
    raw = [np.frombuffer(quant_payload(layout, m), dtype=np.uint8) for m in (gate, up, down)]
    stack = ExpertStack(layout, *raw, d, width, experts, mode)
    n = tied_activations(rng, tokens, d)
    routes = routes_with_ties(rng, tokens, experts, k)
    kern = kernels_for(CANONICAL.with_quantized_matmul(mode))

    def ffn(e: int) -> list:
        rows = slice(e * width, (e + 1) * width)
        rb = [QuantMatrix(m.codes[rows].copy(), m.scale_bits[rows].copy()) for m in (gate, up)]
        ex = Expert(*rb, band_words(down, e * width, (e + 1) * width))
        return lambda v: swiglu_ffn(kern, ex, v)[3]

    want = np.array(
        [combine(r, lambda e, v=list(n[t]): ffn(e)(v), d) for t, r in enumerate(routes)],
        dtype=np.float32,
    )
    for _isa in each_isa():
        same_bits(experts_of(stack, n, routes, threads), want)


def test_the_band_comparison_can_fail() -> None:
    """One code of expert 1's down band changed in the stacked payload changes that expert's
    product (and only its row), read in place."""
    rng = np.random.default_rng(3)
    words = quant_words(rng, "q8_0", 8, 64)
    words.scale_bits[:] = np.float16(0.01).view(np.uint16)
    payload = bytearray(quant_payload("q8_0", words))
    x = np.linspace(1.0, 2.0, 32, dtype=np.float32)[None]

    def band() -> np.ndarray:
        view, stride = col_band_view("q8_0", np.frombuffer(bytes(payload), np.uint8), 8, 64, 32, 64)
        return FastMatrix("q8_0", view, 8, 32, QuantizedMatmul.Q8_ACTIVATION, stride).matmat(x)

    before = band()
    payload[34 * 1 + 2] ^= 0x01  # row 0, block 1 (expert 1's first block), code 0
    after = band()
    assert before[0, 0] != after[0, 0] and (before[0, 1:] == after[0, 1:]).all()


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    codec=st.sampled_from(["f32", "f16"]),
    rows=st.integers(1, 13),
    experts=st.integers(2, 4),
    width=st.integers(1, 40),
    tokens=st.sampled_from([1, 2, 6, 7, 13]),
)
def test_float_down_band_in_place_equals_ref(
    seed: int, codec: str, rows: int, experts: int, width: int, tokens: int
) -> None:
    """An F32 / F16 stacked down matrix's column band read in place (rows `experts · width`
    words apart) gives spec/numerics.md §dot of the band's own words on every kernel path: with
    4-row bands and 6- or 2-token tiles of the AVX-512 / AVX2 register tiles (fast/csrc/f32_x86.c)
    and the rows and tokens left over, and columns past the last multiple of 8. (The tiles once
    stepped `cols` words from row to row, not the matrix's stride: the band read its neighbour
    expert's columns.)"""
    rng = np.random.default_rng(seed)
    dtype = np.float32 if codec == "f32" else np.float16
    words = rng.standard_normal((rows, experts * width)).astype(dtype)
    words[rng.random(words.shape) < 0.05] = dtype(0.0)
    payload = np.frombuffer(words.tobytes(), dtype=np.uint8)
    x = activations(rng, tokens, width)
    k = kernels_for(CANONICAL)
    for e in range(experts):
        lo, hi = e * width, (e + 1) * width
        view, stride = col_band_view(codec, payload, rows, experts * width, lo, hi)
        band = words[:, lo:hi].astype(np.float32)
        want = np.array(
            [[k.dot(list(w), list(t)) for w in band] for t in x], dtype=np.float32
        ).reshape(tokens, rows)
        fast = FastMatrix(codec, view, rows, width, QuantizedMatmul.Q8_ACTIVATION, stride)
        for _isa in each_isa():
            for threads in (1, 3):
                same_bits(fast.matmat(x, threads=threads), want)
