"""wf_attend_tile (fast/csrc/attention_tiles.c: prefill attention as tiles of queries × cached
positions) against the reference's spec/numerics.md §attention, bit for bit.

A tile is every query head of a run of tokens that reads one kv head; each token reads its own
cache rows 0..slots[t], so the queries of a tile reach different positions (slots drawn with gaps
and repeats, not only consecutive ones). head_dim a multiple of 32 (the SIMD bodies: four queries
per register tile on AVX-512, two on AVX2 / NEON, position blocks of 32 with their tails), query
groups of 1 to 8 heads, ties on purpose (repeated key rows give equal scores, a zero query equal
scores everywhere), large scales that drive exp to underflow and overflow-free extremes. Every
kernel path usable here runs (portable: the per-token kernel).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast._native import address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.spec.numerics.profile import CANONICAL


def canonical_bits(a: np.ndarray) -> list[int]:
    """uint32 views, NaNs as one pattern (spec/numerics.md §special-values)."""
    a = np.asarray(a, dtype=np.float32)
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32)).tolist()


def ref_attention(q, keys, values, slots, t0, t1, heads, kv_heads, head_dim, g) -> np.ndarray:
    """att rows [t0, t1) of kv head g's query heads by the reference (others left NaN)."""
    ref = kernels_for(CANONICAL)
    group, kv = heads // kv_heads, g * head_dim
    out = np.full(q.shape, np.nan, dtype=np.float32)
    for t in range(t0, t1):
        n = int(slots[t]) + 1
        ks = [list(keys[j, kv : kv + head_dim]) for j in range(n)]
        vs = [list(values[j, kv : kv + head_dim]) for j in range(n)]
        for h in range(g * group, (g + 1) * group):
            qh = list(q[t, h * head_dim : (h + 1) * head_dim])
            out[t, h * head_dim : (h + 1) * head_dim] = ref.attend(qh, ks, vs)
    return out


@settings(max_examples=15, deadline=None)
@given(
    head_dim=st.sampled_from([32, 64]),
    groups=st.sampled_from([(2, 1), (4, 2), (3, 1), (8, 1), (1, 1)]),
    tokens=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
    data=st.data(),
)
def test_attention_tile_equals_ref(head_dim, groups, tokens, seed, scale, data) -> None:
    heads, kv_heads = groups
    rng = np.random.default_rng(seed)
    steps = data.draw(st.lists(st.integers(0, 9), min_size=tokens, max_size=tokens))
    slots = np.cumsum(steps).astype(np.int64)  # non-decreasing, with gaps and repeats
    npos = int(slots[-1]) + 1
    stride, qd = kv_heads * head_dim, heads * head_dim
    q = (rng.standard_normal((tokens, qd)) * scale).astype(np.float32)
    if rng.random() < 0.3:
        q[0] = 0.0  # every score of token 0 equal: the softmax tie
    keys = (rng.standard_normal((npos, stride)) * scale).astype(np.float32)
    values = rng.standard_normal((npos, stride)).astype(np.float32)
    for j in range(1, npos, 3):
        keys[j] = keys[j - 1]  # equal scores at neighbouring positions
    g = data.draw(st.integers(0, kv_heads - 1))
    t0 = data.draw(st.integers(0, tokens - 1))
    t1 = data.draw(st.integers(t0 + 1, tokens))
    want = ref_attention(q, keys, values, slots, t0, t1, heads, kv_heads, head_dim, g)
    scores = np.empty((t1 - t0) * (heads // kv_heads) * npos, np.float32)
    runs = 0
    for _isa in each_isa():
        got = np.full(q.shape, np.nan, dtype=np.float32)
        kernels().wf_attend_tile(
            address(q), qd, address(keys), address(values), stride, address(slots), t0, t1,
            heads, kv_heads, head_dim, g, address(scores), address(got),
        )  # fmt: skip
        assert canonical_bits(got) == canonical_bits(want)
        runs += 1
    assert runs >= 1


def test_a_tile_reads_only_its_own_positions() -> None:
    """Causality inside a tile: a value changed at row 5 changes token 1 (slots 5) but not token
    0 (slots 4), which shares the tile."""
    rng = np.random.default_rng(5)
    heads, kv_heads, hd = 2, 1, 32
    q = rng.standard_normal((2, heads * hd)).astype(np.float32)
    keys = rng.standard_normal((6, hd)).astype(np.float32)
    values = rng.standard_normal((6, hd)).astype(np.float32)
    slots = np.array([4, 5], dtype=np.int64)
    scores = np.empty(2 * heads * 6, np.float32)
    outs = []
    for bump in (0.0, 1.0):
        v = values.copy()
        v[5] += bump
        att = np.full(q.shape, np.nan, dtype=np.float32)
        kernels().wf_attend_tile(
            address(q), heads * hd, address(keys), address(v), hd, address(slots), 0, 2,
            heads, kv_heads, hd, 0, address(scores), address(att),
        )  # fmt: skip
        outs.append(att)
    assert (outs[0][0] == outs[1][0]).all() and (outs[0][1] != outs[1][1]).any()
