"""The per-layer operations' NEON forms (fast/csrc/ops_body.h instantiated for aarch64) equal the
reference bit for bit under qemu-aarch64 (issue 19 item 2).

The same cross-built driver as the folder's other tests (tests/emulated), on the operations
test_neon_kernels.py does not reach: GQA-group attention at head_dim 32-128 (the SIMD attention;
test_neon_kernels.py runs the plain loop's head sizes), q/k norm + RoPE, and exp on the hard
inputs of the x86 properties.
"""

from __future__ import annotations

import numpy as np
from emulated import QemuDriver
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.layer_ops import bits, hard_vectors, ref_attend

from weightfile.ref.numerics import exp, norm, rope


@settings(max_examples=8, deadline=None)
@given(
    data=st.data(),
    shape=st.sampled_from([(1, 1), (3, 1), (16, 1), (4, 2), (8, 8)]),
    hd=st.sampled_from([32, 64, 128]),
    npos=st.integers(1, 9),
    scale=st.sampled_from([0.05, 1.0, 12.0]),
)
def test_attention_group_under_neon(driver: QemuDriver, data, shape, hd, npos, scale) -> None:
    heads, kv_heads = shape
    stride = kv_heads * hd
    q = data.draw(hard_vectors(heads * hd, scale))
    keys = data.draw(hard_vectors(npos * stride, scale)).reshape(npos, stride)
    values = data.draw(hard_vectors(npos * stride, 1.0)).reshape(npos, stride)
    keys[1::2] = keys[0]  # ties
    got = driver.run("attend_group", [npos, heads, kv_heads, hd], q, keys, values)
    assert bits(got) == bits(ref_attend(q, keys, values, heads, kv_heads, hd))


@settings(max_examples=8, deadline=None)
@given(data=st.data(), tokens=st.integers(1, 2), heads=st.integers(1, 3))
def test_norm_rope_under_neon(driver: QemuDriver, data, tokens: int, heads: int) -> None:
    hd = data.draw(st.sampled_from([2, 18, 64, 128]))
    x = data.draw(hard_vectors(tokens * heads * hd, 2.0))
    w = data.draw(hard_vectors(hd, 1.0))
    cos = data.draw(hard_vectors(tokens * hd // 2, 1.0)).reshape(tokens, hd // 2)
    sin = data.draw(hard_vectors(tokens * hd // 2, 1.0)).reshape(tokens, hd // 2)
    eps = np.float32(1e-6)
    got = driver.run("norm_rope", [tokens, heads, hd, int(eps.view(np.uint32))], x, w, cos, sin)
    want_n, want_r = [], []
    with np.errstate(all="ignore"):
        for t in range(tokens):
            for h in range(heads):
                v = x[(t * heads + h) * hd : (t * heads + h + 1) * hd]
                n = norm.rmsnorm(list(v), list(w), eps)
                want_n += n
                want_r += rope.apply_rope(n, list(cos[t]), list(sin[t]))
    assert bits(got) == bits(want_n + want_r)


@settings(max_examples=6, deadline=None)
@given(data=st.data(), n=st.integers(1, 40))
def test_exp_under_neon(driver: QemuDriver, data, n: int) -> None:
    x = data.draw(hard_vectors(n, 40.0))
    x[: n // 4] = np.float32(data.draw(st.sampled_from([88.72284, -103.97208, -104.0, 89.0])))
    with np.errstate(all="ignore"):
        want = exp.exp(x)
    assert bits(driver.run("exp", [n], x)) == bits(want)
