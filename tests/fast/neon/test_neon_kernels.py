"""The NEON / dotprod kernels equal the reference bit for bit, run under qemu-aarch64 (issue 6).

driver.c is cross-compiled with the kernel sources for armv8.2-a+dotprod and run under
qemu-user on Hypothesis inputs (tests/emulated); the expected results come from ref/numerics.
The driver reports the code path it was built with, and the harness requires the dotprod one.
"""

from __future__ import annotations

import numpy as np
import pytest
from emulated import QemuDriver, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.weights import (
    QUANT_LAYOUTS,
    activations,
    quant_payload,
    quant_words,
    quantized_cases,
)

from weightfile.fast.numerics.matrix import KINDS
from weightfile.ref.numerics import attention, norm, reduce, softmax
from weightfile.ref.numerics import exp as exp_mod
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.spec.codecs.vqf.registry import CODECS
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

#: Extreme inputs overflow the reference's float32 arithmetic to inf/NaN, as the contract defines;
#: numpy's warnings about it are expected here (and only here).
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)


def f32s(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("mode", list(QuantizedMatmul))
@pytest.mark.parametrize("layout", sorted(QUANT_LAYOUTS))
@settings(max_examples=4)
@given(data=st.data())
def test_quantized_products_under_neon(driver: QemuDriver, layout: str, mode, data) -> None:
    words, payload, x = data.draw(quantized_cases(layout))
    rows, cols = words.shape
    tokens = len(x)
    t = CODECS[layout].tiling
    geometry = [t.group_rows, t.chunk_bytes, t.xor] if t else [1, 0, 0]
    op = "q8act" if mode is QuantizedMatmul.Q8_ACTIVATION else "f32"
    k = kernels_for(CANONICAL.with_quantized_matmul(mode))
    want = [k.matvec(words, list(row)) for row in x]
    for threads in (1, 3):  # one thread runs the 4-row kernels on every whole group of rows
        params = [rows, cols, tokens, KINDS[CODECS[layout].base], *geometry, len(payload), threads]
        same_bits(driver.run(op, params, payload, x), want)


@pytest.mark.parametrize("layout", ["q4_0_4x4", "q8_0_8x8"])
@settings(max_examples=3)
@given(seed=st.integers(0, 2**32 - 1), groups=st.integers(1, 2), tokens=st.integers(15, 19))
def test_tiled_token_tiles_under_neon(driver: QemuDriver, layout: str, seed: int, groups, tokens):
    """The dotprod row-group kernels of the tiled layouts with every token in one tile; past 16
    tokens their accumulators move to the heap."""
    rng = np.random.default_rng(seed)
    t = CODECS[layout].tiling
    words = quant_words(rng, layout, t.group_rows * groups, 64)
    payload = quant_payload(layout, words)
    x = activations(rng, tokens, 64)
    k = kernels_for(CANONICAL.with_quantized_matmul(QuantizedMatmul.Q8_ACTIVATION))
    want = [k.matvec(words, list(row)) for row in x]
    geometry = [t.group_rows, t.chunk_bytes, t.xor]
    params = [*words.shape, tokens, KINDS[CODECS[layout].base], *geometry, len(payload), 1]
    same_bits(driver.run("q8act", params, payload, x), want)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 4), n=st.integers(1, 70))
def test_rmsnorm_under_neon(driver: QemuDriver, seed: int, rows: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x, w = f32s(rng, rows, n, scale=10.0 ** rng.integers(-3, 4)), f32s(rng, n)
    eps = np.float32(1e-6)
    got = driver.run("rmsnorm", [rows, n, int(eps.view(np.uint32))], x, w)
    same_bits(got, [norm.rmsnorm(list(r), list(w), eps) for r in x])


@settings(max_examples=10)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 80))
def test_swiglu_under_neon(driver: QemuDriver, seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    g, u = f32s(rng, n, scale=float(rng.choice([0.1, 5.0, 60.0]))), f32s(rng, n)
    g[: n // 8] = np.float32(rng.choice([-200.0, 120.0, 0.0, -0.0]))  # exp under/overflow
    same_bits(driver.run("swiglu", [n], g, u), exp_mod.silu(g) * u)


@settings(max_examples=10)
@given(
    seed=st.integers(0, 2**32 - 1),
    npos=st.integers(1, 9),
    kv_heads=st.integers(1, 2),
    group=st.integers(1, 3),
    head_dim=st.sampled_from([4, 8, 16, 20]),
)
def test_attention_under_neon(driver: QemuDriver, seed, npos, kv_heads, group, head_dim) -> None:
    rng = np.random.default_rng(seed)
    heads = kv_heads * group
    q = f32s(rng, heads, head_dim, scale=3.0)
    k, v = f32s(rng, npos, kv_heads, head_dim, scale=3.0), f32s(rng, npos, kv_heads, head_dim)
    got = driver.run("attend", [npos, heads, kv_heads, head_dim], q, k, v)
    sm = lambda s: softmax.softmax(s, exp_mod.exp)  # noqa: E731
    want = [
        attention.attend_head(
            list(q[h]), list(k[:, h // group]), list(v[:, h // group]), reduce.dot, sm
        )
        for h in range(heads)
    ]
    same_bits(got, want)
