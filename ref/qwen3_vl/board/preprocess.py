"""The engine's image preprocessing (spec/numerics.md §board-vision-preprocess): the target size,
the nearest-neighbour resample by integer division and p/127.5 − 1 in binary32.

The result is the engine's pixel buffer, float32 [H', W', 3] (`vision.pixels_hwc`), the board
tower's input; an odd patch grid is kept (the merge drops its last row or column later).
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32
MAX_SIDE = 2048


def target_size(height: int, width: int, patch: int, max_patches: int) -> tuple[int, int]:
    """spec/numerics.md §board-vision-preprocess (H', W'): enlarged to whole patches when the grid
    fits in max_patches, else both sides scaled by sqrt(max/(gh·gw)) and floored to whole
    patches, the longer side (the width on a tie) then shrunk a patch at a time until it fits;
    each side at least one patch and at most 2048."""
    if height < 1 or width < 1 or max_patches < 1:
        raise ValueError(f"an image of {width}x{height} with {max_patches} patches")
    gw, gh = -(-width // patch), -(-height // patch)
    if gw * gh <= max_patches:
        tw, th = patch * gw, patch * gh
    else:
        s = math.sqrt(max_patches / (gw * gh))
        tw = max(patch, math.floor(width * s / patch) * patch)
        th = max(patch, math.floor(height * s / patch) * patch)
        while (tw // patch) * (th // patch) > max_patches:
            if tw >= th:
                tw -= patch
            else:
                th -= patch
    return min(th, MAX_SIDE), min(tw, MAX_SIDE)


def board_pixels(rgb: np.ndarray, patch: int, max_patches: int) -> np.ndarray:
    """spec/numerics.md §board-vision-preprocess uint8 [H, W, 3] -> float32 [H', W', 3]: source
    pixel (y·H/H', x·W/W') by integer division, then fl(fl(p / 127.5) − 1)."""
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"a pixel array must be uint8 [H, W, 3], got {rgb.dtype} {rgb.shape}")
    h, w = rgb.shape[:2]
    th, tw = target_size(h, w, patch, max_patches)
    rows = (np.arange(th, dtype=np.int64) * h) // th
    cols = (np.arange(tw, dtype=np.int64) * w) // tw
    p = rgb[rows][:, cols].astype(F32)
    return (p / F32(127.5)).astype(F32) - F32(1.0)
