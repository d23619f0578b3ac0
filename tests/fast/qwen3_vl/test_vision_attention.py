"""The vision tower's per-image attention in query tiles (fast/csrc/vision.c wf_attend_segments,
spec/numerics.md §vision-attention) equals, bit for bit on every kernel path and thread count,
the reference's spec/numerics.md §attention per head and query (small images) and the per-query C
kernel it replaced (images past one tile of 64 queries, where the reference is too slow): hard
cases are tile and image boundaries, overflowing scores (NaN rows), tied maxima, ±0, subnormals
and the head widths without a tile body (head_dim % 32 != 0)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast._native import address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.attention import attend_head
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.spec.numerics.profile import CANONICAL

pytestmark = [
    pytest.mark.skipif(kernels() is None, reason="no C kernels"),
    pytest.mark.filterwarnings(
        "ignore:overflow encountered:RuntimeWarning",
        "ignore:invalid value encountered:RuntimeWarning",
    ),
]


def segments(sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """seg_of / seg_len per token for images of `sizes` patches, in order."""
    seg_of = [sum(sizes[:i]) for i, n in enumerate(sizes) for _ in range(n)]
    seg_len = [n for n in sizes for _ in range(n)]
    return np.array(seg_of, np.int64), np.array(seg_len, np.int64)


def tiled(q, k, v, heads, hd, seg_of, seg_len, threads) -> np.ndarray:
    out = np.empty_like(q)
    kernels().wf_attend_segments(
        address(q), address(k), address(v), q.shape[0], heads, hd, address(seg_of),
        address(seg_len), address(out), threads,
    )  # fmt: skip
    return out


def per_query(q, k, v, heads, hd, seg_of, seg_len) -> np.ndarray:
    """The kernel before the tiles: one (token, head) at a time (wf_attend_head)."""
    out = np.empty_like(q)
    w = heads * hd
    scores = np.empty(max(int(seg_len.max()), 1), np.float32)
    for t in range(q.shape[0]):
        s = int(seg_of[t])
        for h in range(heads):
            kernels().wf_attend_head(
                address(q[t]), address(k[s]), address(v[s]), int(seg_len[t]), w, heads, heads,
                hd, h, address(scores), address(out[t]),
            )  # fmt: skip
    return out


def ref_attention(q, k, v, heads, hd, seg_of, seg_len) -> np.ndarray:
    kk = kernels_for(CANONICAL)
    out = np.empty_like(q)
    for t in range(q.shape[0]):
        rows = range(seg_of[t], seg_of[t] + seg_len[t])
        for h in range(heads):
            sl = slice(h * hd, (h + 1) * hd)
            out[t, sl] = attend_head(
                q[t, sl], [k[j, sl] for j in rows], [v[j, sl] for j in rows], kk.dot, kk.softmax
            )
    return out


def inputs(seed: int, tokens: int, width: int, scale: float, specials: bool):
    """q, k, v [tokens, width]; with `specials`, a few entries replaced by ±0, subnormals, huge
    values and repeated rows (tied scores, so the softmax maximum is taken more than once)."""
    rng = np.random.default_rng(seed)
    q, k, v = ((rng.standard_normal((tokens, width)) * scale).astype(np.float32) for _ in range(3))
    if specials:
        pick = np.array([0.0, -0.0, 1e-45, -3e-39, 3e38, -2e19, 2e19], np.float32)
        for a in (q, k, v):
            idx = rng.integers(0, a.size, max(1, a.size // 50))
            a.flat[idx] = rng.choice(pick, idx.size)
        if tokens > 1:
            k[1] = k[0]  # tied keys: equal scores for every query
    return q, k, v


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, (
        f"{bad.size} differ, first at {bad[0]}: {got.flat[bad[0]]} vs {want.flat[bad[0]]}"
    )


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    heads=st.integers(1, 2),
    hd=st.sampled_from([8, 32, 64]),
    scale=st.sampled_from([1e-20, 1.0, 30.0]),
    specials=st.booleans(),
    threads=st.integers(1, 3),
)
def test_tiles_equal_ref(seed, sizes, heads, hd, scale, specials, threads) -> None:
    seg_of, seg_len = segments(sizes)
    q, k, v = inputs(seed, len(seg_of), heads * hd, scale, specials)
    want = ref_attention(q, k, v, heads, hd, seg_of, seg_len)
    for _ in each_isa():
        same_bits(tiled(q, k, v, heads, hd, seg_of, seg_len, threads), want)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(
        st.one_of(st.sampled_from([63, 64, 65, 128, 129]), st.integers(1, 200)),
        min_size=1,
        max_size=3,
    ),
    heads=st.integers(1, 3),
    hd=st.sampled_from([16, 32, 64, 72, 128]),
    scale=st.sampled_from([1e-20, 1.0, 30.0, 1e19]),
    specials=st.booleans(),
    threads=st.integers(1, 3),
)
def test_tiles_equal_the_per_query_kernel(seed, sizes, heads, hd, scale, specials, threads) -> None:
    """Images across one and several tiles (63, 64, 65, 128, 129 patches), every path."""
    seg_of, seg_len = segments(sizes)
    q, k, v = inputs(seed, len(seg_of), heads * hd, scale, specials)
    for _ in each_isa():
        want = per_query(q, k, v, heads, hd, seg_of, seg_len)
        for th in (1, threads):
            same_bits(tiled(q, k, v, heads, hd, seg_of, seg_len, th), want)


def test_one_image_reads_only_its_own_patches() -> None:
    """Two images of 70 and 3 patches: changing the second image's keys and values leaves the
    first image's outputs unchanged, and a one-patch image attends to itself alone (its output
    is its own value row: softmax of one score is 1, 0 + 1·v = v)."""
    seg_of, seg_len = segments([70, 3, 1])
    q, k, v = inputs(5, 74, 64, 1.0, False)
    a = tiled(q, k, v, 1, 64, seg_of, seg_len, 2)
    k2, v2 = k.copy(), v.copy()
    k2[70:73] *= 3
    v2[70:73] += 1
    b = tiled(q, k2, v2, 1, 64, seg_of, seg_len, 2)
    same_bits(b[:70], a[:70])
    assert not np.array_equal(b[70:73], a[70:73])
    same_bits(a[73], v[73])


@pytest.mark.parametrize("hd", [64, 72])
def test_tile_boundaries_by_construction(hd) -> None:
    """Images of 63, 64, 65 and 129 patches (one tile short, exactly one, one past, two tiles and
    one past) and 784 (the 448×448 image: 13 tiles of 61 or 52), two heads, 1 and 2 threads:
    the per-query kernel's bits on every path."""
    seg_of, seg_len = segments([63, 64, 65, 129, 784])
    q, k, v = inputs(11, len(seg_of), 2 * hd, 1.0, True)
    for _ in each_isa():
        want = per_query(q, k, v, 2, hd, seg_of, seg_len)
        for th in (1, 2):
            same_bits(tiled(q, k, v, 2, hd, seg_of, seg_len, th), want)
