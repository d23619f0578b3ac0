"""fast/csrc/vision.c under qemu-aarch64 equals the reference bit for bit (spec/numerics.md
§vision): LayerNorm with a bias, the GELUs (the NEON tanh estimate and the aarch64 libm's erfc,
the flagged near-midpoint elements evaluated again in fast/csrc/gelu.c's double-double arithmetic)
and the per-image bidirectional attention. Without the tools the tests skip, except under CI (env CI
set), where a missing tool is a failure (tests/emulated)."""

from __future__ import annotations

import numpy as np
import pytest
from emulated import QemuDriver, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast.qwen3_vl import numerics as fast
from weightfile.ref.numerics.attention import attend_head
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen3_vl import numerics as ref
from weightfile.spec.numerics.profile import CANONICAL


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 4), n=st.integers(1, 80))
def test_layernorm_under_neon(driver: QemuDriver, seed: int, rows: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * rng.choice([1e-20, 1.0, 1e6])).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    eps = np.float32(1e-6)
    got = driver.run("layernorm", [rows, n, int(eps.view(np.uint32)), 2], x, w, b)
    same_bits(got, [ref.layernorm(list(r), w, b, eps) for r in x])


@pytest.mark.parametrize("kind", [0, 1])
def test_gelu_under_neon(driver: QemuDriver, kind: int) -> None:
    """4096 inputs across the active range plus specials, and 64 near-midpoint ones (flagged
    by the guard band on x86-64): every element is the reference's correctly rounded value, the
    flagged ones from the double-double path (flag 1), none left over (flag 2)."""
    rng = np.random.default_rng(11 + kind)
    wide = (rng.standard_normal(1 << 18) * 4).astype(np.float32)
    _, flags = x86_gelu(wide, kind)
    x = np.concatenate([(rng.standard_normal(4096) * 4).astype(np.float32), wide[flags == 1][:64]])
    x[:8] = [0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38, 30.0, -30.0]
    out = driver.run("gelu", [x.size, kind, 3], x)
    got, flags = out[: x.size].copy(), out[x.size :]
    exact = ref.gelu_tanh if kind == 0 else ref.gelu_erf
    assert not np.any(flags == 2) and np.count_nonzero(flags == 1) >= 64
    same_bits(got, [exact(v) for v in x])


def x86_gelu(x: np.ndarray, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """The host's wf_gelu: (out, flags)."""
    out, flags = np.empty_like(x), np.empty(x.shape, np.uint8)
    fast.kernels().wf_gelu(
        x.ctypes.data, x.size, kind, fast.GUARD, out.ctypes.data, flags.ctypes.data, 1
    )
    return out, flags


@settings(max_examples=4, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    head_dim=st.sampled_from([4, 16, 32]),
)
def test_segment_attention_under_neon(driver: QemuDriver, seed: int, sizes, head_dim: int) -> None:
    rng = np.random.default_rng(seed)
    heads, t = 2, sum(sizes)
    q, k, v = (rng.standard_normal((t, heads * head_dim)).astype(np.float32) for _ in range(3))
    seg_of = [s for i, n in enumerate(sizes) for s in [sum(sizes[:i])] * n]
    seg_len = [n for n in sizes for _ in range(n)]
    got = driver.run("segments", [t, heads, head_dim, 2, *seg_of, *seg_len], q, k, v)
    kk = kernels_for(CANONICAL)
    want = []
    for r in range(t):
        seg = range(seg_of[r], seg_of[r] + seg_len[r])
        for h in range(0, heads * head_dim, head_dim):
            sl = slice(h, h + head_dim)
            want += attend_head(
                q[r, sl], [k[j, sl] for j in seg], [v[j, sl] for j in seg], kk.dot, kk.softmax
            )
    same_bits(got, want)
