"""Image preprocessing (weightfile/frontend/image.py) against transformers' Qwen2-VL image
processor with its PIL backend, bit for bit, and the refusals (spec/models.md §qwen3-vl)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.frontend.image import (
    ImageSettings,
    board_size,
    load_image,
    preprocess,
    preprocess_board,
    preprocess_hf,
    smart_resize,
)
from weightfile.spec.errors import InvalidError, UnsupportedError

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def processor(s: ImageSettings):
    pil = pytest.importorskip(
        "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl",
        reason="the oracle needs the 'external' extra (transformers)",
    )
    return pil.Qwen2VLImageProcessorPil(
        patch_size=s.patch_size,
        merge_size=s.merge_size,
        temporal_patch_size=s.temporal_patch_size,
        image_mean=list(s.image_mean),
        image_std=list(s.image_std),
        min_pixels=s.min_pixels,
        max_pixels=s.max_pixels,
    )


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@settings(max_examples=12, deadline=None)
@given(
    h=st.integers(8, 180),
    w=st.integers(8, 180),
    lo=st.sampled_from([1024, 4096, 16384]),
    hi=st.sampled_from([8192, 32768]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pixel_values_and_grid_equal_the_processor(h, w, lo, hi, seed) -> None:
    """Random sizes reach every smart_resize branch (snap, shrink, grow)."""
    s = ImageSettings(min_pixels=lo, max_pixels=max(lo, hi))
    arr = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    want = processor(s)(images=[Image.fromarray(arr)], return_tensors="np")
    got = preprocess_hf(Image.fromarray(arr), s)
    assert list(want["image_grid_thw"][0]) == list(got.grid_thw)
    assert np.array_equal(bits(want["pixel_values"]), bits(got.pixel_values))
    assert got.n_tokens == got.grid_thw[1] * got.grid_thw[2] // 4


def test_rgba_and_grey_are_converted_like_the_processor(tmp_path) -> None:
    s = ImageSettings(min_pixels=4096, max_pixels=16384)
    rng = np.random.default_rng(7)
    rgba = Image.fromarray(rng.integers(0, 256, (70, 45, 4), dtype=np.uint8), "RGBA")
    grey = Image.fromarray(rng.integers(0, 256, (40, 90), dtype=np.uint8), "L")
    for im in (rgba, grey):
        want = processor(s)(images=[im], return_tensors="np")["pixel_values"]
        assert np.array_equal(bits(want), bits(preprocess_hf(im, s).pixel_values))
    path = tmp_path / "a.png"
    rgba.save(path)
    from_file = preprocess(path, s)
    assert np.array_equal(bits(from_file.pixel_values), bits(preprocess_hf(rgba, s).pixel_values))


def test_smart_resize_by_hand() -> None:
    # 50x77 with F=32: round(1.5625)=2, round(2.40625)=2 -> 64x64 = 4096, inside [1024, 8192]
    assert smart_resize(50, 77, 32, 1024, 8192) == (64, 64)
    # ties to even: 48/32 = 1.5 -> 2, 80/32 = 2.5 -> 2
    assert smart_resize(48, 80, 32, 1, 10**6) == (64, 64)
    # grow: 20x20 below 4096: beta = sqrt(4096/400) = 3.2, ceil(64/32)*32 = 64
    assert smart_resize(20, 20, 32, 4096, 10**6) == (64, 64)
    # shrink: 1000x1000 above 65536: beta = sqrt(1e6/65536) = 3.90625, floor(256/32)*32 = 256
    assert smart_resize(1000, 1000, 32, 1024, 65536) == (256, 256)


def test_refusals_are_typed(tmp_path) -> None:
    with pytest.raises(InvalidError) as e:
        smart_resize(10, 2010)
    assert e.value.rule == "frontend.image.aspect"
    with pytest.raises(InvalidError) as e:
        load_image(tmp_path / "missing.png")
    assert e.value.rule == "frontend.image.unreadable"
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image at all")
    with pytest.raises(InvalidError) as e:
        preprocess(junk)
    assert e.value.rule == "frontend.image.unreadable"
    with pytest.raises(UnsupportedError) as e:
        preprocess(np.zeros((32, 32, 3), np.uint8), mode="bicubic-please")
    assert e.value.rule == "frontend.image.mode"
    # board: 48x48 pixels is a 3x3 patch grid, which 2x2 windows cannot merge
    with pytest.raises(InvalidError) as e:
        preprocess_board(np.zeros((48, 48, 3), np.uint8))
    assert e.value.rule == "frontend.image.grid"


def test_board_nearest_and_p_over_127_5() -> None:
    """Hand derivation: 40x70 -> 32x64 (floored to 16), source row floor(i*40/32), column
    floor(j*70/64); value p/127.5 - 1 in float32."""
    s = ImageSettings()
    assert board_size(40, 70, s) == (32, 64)
    assert board_size(2000, 2000, ImageSettings(max_patches=64)) == (128, 128)
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 256, (40, 70, 3), dtype=np.uint8)
    got = preprocess_board(arr, s)
    assert got.grid_thw == (1, 2, 4)
    # row 5 = window 1 (by 0, bx 1), inside 1 (my 0, mx 1): patch row 0, column 3
    r, c = 0 * 16 + 7, 3 * 16 + 2  # py 7, px 2, channel 1, t 1
    col = ((1 * 2 + 1) * 16 + 7) * 16 + 2
    p = arr[(r * 40) // 32, (c * 70) // 64, 1]
    assert got.pixel_values[5, col] == np.float32(p) / np.float32(127.5) - np.float32(1)
