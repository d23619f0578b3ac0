"""The board's text tower with images (spec/numerics.md §board-vl-prefill), read from the
engine's source: no pack has engine logits, so these check what can be checked without them —
the MRoPE positions against the canonical `get_rope_index` (itself checked against
transformers) and by hand, the MRoPE table against the 1-D board rotary, the multimodal
attention on hand-derived cases, the DeepStack rows, and the fast engine equal to the reference
bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.ref.qwen3.board.attention import BoardKV
from weightfile.ref.qwen3.board.rope import cos_sin
from weightfile.ref.qwen3_vl.board.prefill import (
    VisualRows,
    decode_at,
    mm_attend,
    mrope_cos_sin,
    mrope_positions,
    multimodal_prefill,
)
from weightfile.ref.qwen3_vl.model import rope_index
from weightfile.ref.vqf.read import open_vqf

PACK = Path(__file__).resolve().parents[3] / "data" / "kestrel-board-v2" / "vl-a-q8_0-img64x96"
IMG, START, END = 250, 248, 249  # the pack model's image / vision-start / vision-end ids
F32 = np.float32


def test_positions_by_hand() -> None:
    # 1, <vision_start>, a 2×3 merged image, <vision_end>, 17, 18: the image starts at text
    # position 2, rows 2..3 and columns 2..4; then the text position advances by max(2, 3) = 3
    p = mrope_positions([1, START, *[IMG] * 6, END, 17, 18], IMG, [(2, 3)])
    assert p.thw == ((0, 0, 0), (1, 1, 1), (2, 2, 2), (2, 2, 3), (2, 2, 4), (2, 3, 2),
                     (2, 3, 3), (2, 3, 4), (5, 5, 5), (6, 6, 6), (7, 7, 7))  # fmt: skip
    assert p.visual_row == (-1, -1, 0, 1, 2, 3, 4, 5, -1, -1, -1)
    assert p.next_text == 8


@st.composite
def layouts(draw):
    """A prompt of text runs and images (merged grids up to 4×4), image tokens expanded."""
    ids, grids = [], []
    for _ in range(draw(st.integers(1, 3))):
        ids += draw(st.lists(st.integers(0, 240), max_size=4))
        th, tw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        ids += [START, *[IMG] * (th * tw), END]
        grids.append((th, tw))
    return ids + draw(st.lists(st.integers(0, 240), max_size=3)), grids


@given(layouts())
@settings(max_examples=60, deadline=None)
def test_positions_are_get_rope_index(layout) -> None:
    """Every token's (t, h, w) and the position decoding continues from (prompt length + δ)
    equal the canonical rope_index of the same prompt (spec/models.md §qwen3-vl (b))."""
    ids, grids = layout
    want, delta = rope_index(ids, IMG, [(1, 2 * th, 2 * tw) for th, tw in grids], 2)
    got = mrope_positions(ids, IMG, grids)
    assert list(got.thw) == want
    assert got.next_text == len(ids) + delta
    assert [r for r in got.visual_row if r >= 0] == list(range(sum(a * b for a, b in grids)))


@given(st.integers(0, 4096))
@settings(max_examples=40, deadline=None)
def test_equal_axes_are_the_one_dimensional_rotary(pos) -> None:
    """A text token's MRoPE table (t = h = w) is the board's 1-D table bit for bit."""
    c1, s1 = cos_sin(pos, 5e6, 32)
    c3, s3 = mrope_cos_sin((pos, pos, pos), 5e6, 32, (8, 4, 4))
    assert np.array_equal(c1.view(np.uint32), c3.view(np.uint32))
    assert np.array_equal(s1.view(np.uint32), s3.view(np.uint32))


def test_sections_pick_the_axes_by_hand() -> None:
    # sections (8, 4, 4), half 16: j % 3 == 1 and j < 12 -> h; j % 3 == 2 and j < 12 -> w
    got, _ = mrope_cos_sin((0, 7, 0), 5e6, 32, (8, 4, 4))
    moved = [j for j in range(16) if got[j] != F32(1.0)]
    assert moved == [1, 4, 7, 10]  # j = 13 is t's slot again: 13 ≥ 12


def test_mm_attention_by_hand() -> None:
    """One position: weight 1, o = (1·v8)·vs; two positions with equal scores: weights 1/2."""
    kv = BoardKV()
    k = np.array([[1.0, 0.0, 0.0, 0.0]], F32)
    v = np.array([[0.5, -1.0, 0.25, 0.0]], F32)
    kv.append(k, v)
    got = mm_attend(np.array([3.0, 0.0, 0.0, 0.0], F32), kv, 1, 1, 4)
    codes, scale = kv.v8[0][0], kv.vs[0][0]  # amax 1: codes floor(x·127 + 0.5)
    assert codes.tolist() == [64, -127, 32, 0]
    assert np.array_equal(got, (F32(1.0) * codes.astype(F32)) * scale)
    kv.append(k, -v)
    two = mm_attend(np.array([3.0, 0.0, 0.0, 0.0], F32), kv, 2, 1, 4)
    half = F32(0.5)  # exp(0)/2 twice: (0.5·c)·s + (0.5·(−c'))·s'
    want = (half * codes.astype(F32)) * scale + (half * kv.v8[1][0].astype(F32)) * kv.vs[1][0]
    assert np.array_equal(two, want)


@pytest.fixture(scope="module")
def engines():
    from weightfile.fast.qwen3_vl.board.model import bind_board_vl_fast
    from weightfile.ref.qwen3_vl.board.model import bind_board_vl

    with open_vqf(PACK / "model.vqf") as vqf:
        yield bind_board_vl(vqf).text, bind_board_vl_fast(vqf, threads=2).text


def run(model, ids, grids, vis, steps=2):
    p = mrope_positions(ids, IMG, grids)
    cache = model.new_cache()
    rows = [multimodal_prefill(model, ids, p, vis, cache)]
    for k in range(steps):
        rows.append(decode_at(model, 7 + k, cache, p.next_text + k))
    return np.stack(rows)


@given(layouts(), st.integers(0, 2**31), st.sampled_from([0, 1, 2]))
@settings(max_examples=8, deadline=None)
def test_fast_is_the_reference(engines, layout, seed, deepstack) -> None:
    """The multimodal prefill and two decode steps: the C engine's logits are the reference's
    bit for bit, with 0–2 DeepStack features."""
    ids, grids = layout
    rng = np.random.default_rng(seed)
    n = sum(a * b for a, b in grids)
    features = tuple(rng.standard_normal((n, 64), dtype=F32) for _ in range(deepstack))
    vis = VisualRows(rng.standard_normal((n, 64), dtype=F32), features)
    ref, fast = engines
    assert np.array_equal(run(ref, ids, grids, vis).view(np.uint32),
                          run(fast, ids, grids, vis).view(np.uint32))  # fmt: skip


def test_deepstack_rows_enter_the_first_layers_only(engines) -> None:
    """Zero DeepStack features leave the logits as without any (x + 0 = x); a feature on a
    visual row changes them; one for a layer the model lacks is never read."""
    ref, _ = engines
    ids, grids = [1, START, *[IMG] * 4, END, 9], [(2, 2)]
    rng = np.random.default_rng(3)
    tokens = rng.standard_normal((4, 64), dtype=F32)
    plain = run(ref, ids, grids, VisualRows(tokens, ()), steps=0)
    zeros = run(ref, ids, grids, VisualRows(tokens, (np.zeros((4, 64), F32),)), steps=0)
    assert np.array_equal(plain, zeros)
    ds = rng.standard_normal((4, 64), dtype=F32)
    assert not np.array_equal(plain, run(ref, ids, grids, VisualRows(tokens, (ds,)), steps=0))
    beyond = VisualRows(tokens, (np.zeros((4, 64), F32),) * 2 + (ds,))  # layer 2 of 2
    assert np.array_equal(plain, run(ref, ids, grids, beyond, steps=0))
