"""`smart_resize` exactly on its boundaries (spec/models.md §qwen3-vl, "Image preprocessing"):
the rounded area equal to min_pixels or max_pixels, sides on a factor's half (Python's round
ties to even), the aspect limit and the one-factor floor of the shrink branch.

The Hugging Face processor's documented rule (transformers' `smart_resize`): each side rounded to
a multiple of `factor`; kept when the rounded area lies within [min_pixels, max_pixels], both
ends included; above max_pixels both sides shrink by β = √(h·w / max) and are floored to the
factor (at least one factor); below min_pixels both grow by β = √(min / (h·w)) and are ceiled.
Every expected value below is worked from that rule by hand; transformers' own function, where
installed, must agree on each and on a dense sweep of small sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from weightfile.frontend.image import ImageSettings, board_size, preprocess_hf, smart_resize
from weightfile.spec.errors import InvalidError

MIN, MAX = 65536, 16777216  # the released defaults: 256², 4096²

#: (height, width, factor, min_pixels, max_pixels) -> (h', w'), each worked by hand.
CASES = {
    # rounded 256 × 256 = 65536 = min exactly: kept. (Growing would take β = √(65536 / 62976)
    # = 1.02012: 246β / 32 = 7.84 -> 8, 256β / 32 = 8.16 -> 9, i.e. 256 × 288.)
    (246, 256, 32, MIN, MAX): (256, 256),
    (256, 256, 32, MIN, MAX): (256, 256),  # already on the grid and on min
    # rounded 224 × 288 = 64512, one row of factors under min: grows, β = √(65536 / 64512)
    # = 1.00791: 224β / 32 = 7.06 -> 8, 288β / 32 = 9.07 -> 10.
    (224, 288, 32, MIN, MAX): (256, 320),
    # 4100 / 32 = 128.125 -> 128: rounded 4096 × 4096 = max exactly: kept. (Shrinking would take
    # β = √(4100 / 4096) = 1.000488: 4100 / β / 32 = 128.06 -> 128, 4096 / β / 32 = 127.94 -> 127.)
    (4100, 4096, 32, MIN, MAX): (4096, 4096),
    # 4112 / 32 = 128.5 ties to even 128: on max again, kept
    (4096, 4112, 32, MIN, MAX): (4096, 4096),
    # 4128 / 32 = 129: 4096 × 4128 > max: β = √(4128 / 4096) = 1.003899: 4096 / β / 32 = 127.5
    # -> 127, 4128 / β / 32 = 128.5 -> 128
    (4096, 4128, 32, MIN, MAX): (4064, 4096),
    # factor halves: 48 / 32 = 1.5 -> 2, 80 / 32 = 2.5 -> 2 (even), 112 / 32 = 3.5 -> 4
    (48, 80, 32, 1024, MAX): (64, 64),
    (112, 80, 32, 1024, MAX): (128, 64),
    # 16 / 32 = 0.5 -> 0: area 0 < min, grows with β = √(1024 / 16384) = 0.25: 16·0.25 / 32
    # -> 1, 1024·0.25 / 32 = 8
    (16, 1024, 32, 1024, MAX): (32, 256),
    # shrink with the one-factor floor: β = √(320000 / 65536) = 2.2097: 40 / β / 32 = 0.57 -> 0,
    # so 32; 8000 / β / 32 = 113.1 -> 113
    (40, 8000, 32, 1024, 65536): (32, 3616),
    # the aspect limit itself (200:1) is taken: 1 / 32 -> 0, area 0, β = √(65536 / 200) = 18.10:
    # 18.10 / 32 -> 1, 3620.4 / 32 = 113.1 -> 114
    (1, 200, 32, MIN, MAX): (32, 3648),
}


@pytest.mark.parametrize(("args", "want"), CASES.items(), ids=[str(a[:2]) for a in CASES])
def test_boundary_sizes_by_hand(args: tuple[int, ...], want: tuple[int, int]) -> None:
    assert smart_resize(*args) == want


def test_the_aspect_limit_is_inclusive() -> None:
    """200:1 is resized; anything above is `frontend.image.aspect` (the processor's ValueError)."""
    assert smart_resize(2, 400) == smart_resize(400, 2)[::-1]
    for h, w in ((2, 401), (401, 2), (1, 201)):
        with pytest.raises(InvalidError) as info:
            smart_resize(h, w)
        assert info.value.rule == "frontend.image.aspect"


FACTORS = st.sampled_from([4, 8, 28, 32])


@st.composite
def on_a_limit(draw: st.DrawFn) -> tuple[int, int, int, int, int, tuple[int, int]]:
    """Sizes whose rounded area is exactly the limit drawn (min or max), anywhere in each side's
    rounding window: the rule keeps the rounded sides."""
    f = draw(FACTORS)
    k1, k2 = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    half = f // 2 - 1  # strictly inside the window: no tie to decide
    h = k1 * f + draw(st.integers(-half, half))
    w = k2 * f + draw(st.integers(-half, half))
    assume(max(h, w) / min(h, w) <= 200)
    area = k1 * k2 * f * f
    if draw(st.booleans()):
        lo, hi = area, area * draw(st.integers(1, 4))  # min on the boundary (max maybe too)
    else:
        lo, hi = max(1, area // draw(st.integers(1, 4))), area  # max on the boundary
    return h, w, f, lo, hi, (k1 * f, k2 * f)


@given(on_a_limit())
def test_a_rounded_area_on_either_limit_is_kept(case) -> None:
    h, w, f, lo, hi, want = case
    assert smart_resize(h, w, f, lo, hi) == want


@given(FACTORS, st.integers(1, 40), st.integers(1, 40), st.integers(0, 1))
def test_one_factor_inside_a_limit_moves(f: int, k1: int, k2: int, side: int) -> None:
    """One factor² of area beyond a limit changes the size, and the result lies on the far side
    of it (a grown area reaches min, a shrunk one stays under max)."""
    h, w = k1 * f, k2 * f
    area = h * w
    assume(max(h, w) / min(h, w) <= 200)
    if side:  # min one factor-row above the area: grows to at least min
        got = smart_resize(h, w, f, area + f * f, 10 * area + f * f)
        assert got != (h, w) and got[0] * got[1] >= area + f * f
    else:
        assume(area > f * f)
        got = smart_resize(h, w, f, 1, area - f * f)
        assert got != (h, w) and (got[0] * got[1] <= area - f * f or f in got)
    assert got[0] % f == 0 and got[1] % f == 0


def test_board_grid_on_its_patch_limit() -> None:
    """spec/models.md §qwen3-vl (board): 48 × 48 patches = 2304 = vis_max_pos is kept; one more
    column scales both down (√(2304 / 2352) = 0.98974: 48 -> 47, 49 -> 48)."""
    s = ImageSettings()
    assert board_size(768, 768, s) == (768, 768)
    assert board_size(768, 784, s) == (47 * 16, 48 * 16)


# -- transformers' own smart_resize and processor, where installed -------------------------------


def _hf_smart_resize():
    pil = pytest.importorskip(
        "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl",
        reason="the oracle needs the 'external' extra (transformers)",
    )
    return pil.smart_resize


def test_hand_cases_equal_transformers() -> None:
    hf = _hf_smart_resize()
    for args, want in CASES.items():
        assert hf(*args) == want, args


def test_dense_small_sweep_equals_transformers() -> None:
    """Every size up to 60 × 60 with factor 4 and limits that many rounded areas hit exactly."""
    hf = _hf_smart_resize()
    for lo, hi in ((64, 256), (144, 1600), (16, 64)):
        for h in range(1, 61):
            for w in range(1, 61):
                if max(h, w) / min(h, w) > 200:
                    continue
                assert smart_resize(h, w, 4, lo, hi) == hf(h, w, 4, lo, hi), (h, w, lo, hi)


def test_processor_grid_on_the_min_boundary() -> None:
    """The whole Qwen2-VL processor (PIL backend) gives the 246 × 256 picture a 16 × 16 grid."""
    pil = pytest.importorskip(
        "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl",
        reason="the oracle needs the 'external' extra (transformers)",
    )
    from PIL import Image

    s = ImageSettings()
    proc = pil.Qwen2VLImageProcessorPil(
        patch_size=s.patch_size,
        merge_size=s.merge_size,
        temporal_patch_size=s.temporal_patch_size,
        image_mean=list(s.image_mean),
        image_std=list(s.image_std),
        min_pixels=s.min_pixels,
        max_pixels=s.max_pixels,
    )
    arr = np.random.default_rng(3).integers(0, 256, (246, 256, 3), dtype=np.uint8)
    want = proc(images=[Image.fromarray(arr)], return_tensors="np")
    got = preprocess_hf(Image.fromarray(arr), s)
    assert list(want["image_grid_thw"][0]) == list(got.grid_thw) == [1, 16, 16]
