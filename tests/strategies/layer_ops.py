"""Inputs and reference results for the per-layer operation properties (issue 19): hard float32
vectors and the reference's GQA attention, shared by tests/differential/ and the qemu NEON suite
(tests/fast/neon/test_neon_ops.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from weightfile.ref.numerics import attention, exp, reduce, softmax

#: Bit patterns a random float rarely is: ±0, the smallest subnormals, the largest finite values.
HARD = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF]
HARD += [0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x1F800000]


def bits(a: np.ndarray) -> list[int]:
    """uint32 views, every NaN as one pattern (spec/numerics.md §special-values)."""
    a = np.asarray(a, dtype=np.float32).reshape(-1)
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32)).tolist()


@st.composite
def hard_vectors(draw: st.DrawFn, n: int, scale: float) -> np.ndarray:
    """n float32: normals of the given scale with some lanes replaced by HARD patterns."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    for i in draw(st.lists(st.integers(0, n - 1), max_size=max(1, n // 4))):
        x[i] = np.array(draw(st.sampled_from(HARD)), np.uint32).view(np.float32)
    return x


def ref_attend(q, keys, values, heads, kv_heads, hd) -> list[np.float32]:
    group = heads // kv_heads
    sm = lambda s: softmax.softmax(s, exp.exp)  # noqa: E731
    out: list[np.float32] = []
    with np.errstate(all="ignore"):
        for h in range(heads):
            g = h // group
            ks = [list(keys[j, g * hd : (g + 1) * hd]) for j in range(keys.shape[0])]
            vs = [list(values[j, g * hd : (g + 1) * hd]) for j in range(keys.shape[0])]
            out += attention.attend_head(list(q[h * hd : (h + 1) * hd]), ks, vs, reduce.dot, sm)
    return out
