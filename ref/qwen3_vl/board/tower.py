"""The Qwen3-VL vision tower as the board engine computes it (spec/numerics.md §board-vision),
recording every intermediate under the engine dumps' names (spec/numerics.md
§board-vision-names): `vision.*`, `vit.layer{l}.*`, `ds{d}.*`, `merger.*`.

Patches are in raster order (row-major over the grid), not the merge-window order of the
canonical tower; the merge reads 2×2 windows from the raster rows and drops an odd grid's last
row or column (spec/numerics.md §board-vision-merge).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)
from weightfile.spec.errors import InvalidError

from . import ops
from .attention import attend, attention_scale
from .linear import q8_linear

F32 = np.float32
Record = Callable[[str, np.ndarray], None]
SCORE_QUERIES = 32  # the engine's first query block: the rows of vit.layer0.scores.h{h}


@dataclass(frozen=True)
class BoardVisionOutput:
    """The visual tokens [T, out] and one DeepStack feature [T, out] per DeepStack merger."""

    merger_out: np.ndarray
    deepstack: tuple[np.ndarray, ...]


def merge_windows(x: np.ndarray, gh: int, gw: int) -> np.ndarray:
    """spec/numerics.md §board-vision-merge [P, vh] raster rows -> [(gh//2)·(gw//2), 4·vh]: token
    (ty, tx) is patches (2ty+dy, 2tx+dx) side by side in [dy][dx] order."""
    th, tw = gh // 2, gw // 2
    grid = x.reshape(gh, gw, -1)[: 2 * th, : 2 * tw]
    win = grid.reshape(th, 2, tw, 2, -1).transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(win.reshape(th * tw, -1))


def ffn_stride_buffer(fc1: np.ndarray, padded: int) -> np.ndarray:
    """spec/numerics.md §board-vision-ffn-stride fc1's rows [P, vf] written one after another in a
    zeroed buffer, read back as rows of `padded` columns [P, padded] (the same rows when vf is
    already padded)."""
    p, vf = fc1.shape
    buf = np.zeros(p * padded, F32)
    buf[: p * vf] = fc1.ravel()
    return buf.reshape(p, padded)


class BoardVisionTower:
    """The tower bound to its weights (ref/qwen3_vl/bind_vqf.py), under the board's numerics."""

    def __init__(self, config: VisionConfig, weights: VisionWeights) -> None:
        self.config = config
        self.weights = weights
        self.eps = F32(config.eps)

    # --- the operations, one method each (fast/qwen3_vl/board swaps them for its C twins) ------

    def layernorm(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.layernorm(x, w, b, self.eps)

    def linear(self, m: QuantMatrix, bias: np.ndarray, x: np.ndarray) -> np.ndarray:
        return q8_linear(m, bias, x)

    def attend(self, q: np.ndarray, k: np.ndarray, v: np.ndarray):
        return attend(q, k, v, attention_scale(self.config.head_dim))

    def gelu(self, x: np.ndarray) -> np.ndarray:
        return ops.gelu(x)

    def dense(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.dense_linear(x, w, b)

    def patch_embed(self, rows: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ops.patch_embed(rows, w, b)

    # --- the tower ------------------------------------------------------------------------------

    def embed(self, pixels: np.ndarray, rec: Record) -> tuple[np.ndarray, int, int]:
        """spec/numerics.md §board-vision-patch, §board-vision-pos patch embedding plus positions:
        (x [P, vh], gh, gw)."""
        c, w = self.config, self.weights
        gh, gw = check_pixels(pixels, c)
        rows = ops.patch_rows(pixels, c.patch_size, c.temporal_patch_size)
        pe = self.patch_embed(rows, w.patch_embed.values, w.patch_bias)
        x = pe + ops.position_rows(w.pos_embed, gh, gw)
        rec("vision.patch_embed", pe)
        rec("vision.patch_plus_pos", x)
        return x, gh, gw

    def block(self, i: int, bw: VisionBlockWeights, x: np.ndarray, rot, rec: Record):
        """spec/numerics.md §board-vision-block one ViT block: x + proj(attn(ln1 x)), then
        + fc2(gelu(fc1(ln2 ·))) through the padded-stride buffer."""
        c = self.config
        nh, hd, p = c.num_heads, c.head_dim, x.shape[0]
        n1 = self.layernorm(x, bw.norm1_w, bw.norm1_b)
        qkv = self.linear(bw.qkv, bw.qkv_b, n1).reshape(p, 3, nh, hd).transpose(1, 2, 0, 3)
        roped = np.stack([ops.rotate(qkv[0], *rot), ops.rotate(qkv[1], *rot), qkv[2]])
        heads = [self.attend(roped[0, h], roped[1, h], roped[2, h]) for h in range(nh)]
        att = np.concatenate([o for o, _ in heads], axis=1)
        proj = self.linear(bw.proj, bw.proj_b, att)
        r1 = x + proj
        n2 = self.layernorm(r1, bw.norm2_w, bw.norm2_b)
        fc1 = self.linear(bw.fc1, bw.fc1_b, n2)
        buf = ffn_stride_buffer(fc1, bw.fc2.shape[1])
        vf = c.intermediate_size
        act = np.concatenate([self.gelu(buf[:, :vf]), np.zeros_like(buf[:, vf:])], axis=1)
        fc2 = self.linear(bw.fc2, bw.fc2_b, act)
        out = r1 + fc2
        scores = (
            {f"scores.h{h}": s[:SCORE_QUERIES] for h, (_, s) in enumerate(heads)} if i == 0 else {}
        )
        named = dict(ln1=n1, qkv_headmajor=qkv, qkv_rope_headmajor=roped, **scores, attn=att)
        named |= dict(proj=proj, resid1=r1, ln2=n2, fc1=fc1, gelu_padded=act, fc2=fc2, out=out)
        for name, value in named.items():  # in the order computed (diff's first divergence)
            rec(f"vit.layer{i}.{name}", value)
        return out

    def merger(self, name: str, mw: MergerWeights, x, gh: int, gw: int, chunked: bool, rec):
        """spec/numerics.md §board-vision-mergers 2×2 merge, LayerNorm (per vh chunk with the
        same weights when `chunked`, else over the whole window), fc1, GELU, fc2. [T, out]"""
        m = merge_windows(x, gh, gw)
        if chunked:
            vh = self.config.hidden_size
            n = self.layernorm(m.reshape(m.shape[0], -1, vh), mw.norm_w, mw.norm_b)
            n = n.reshape(m.shape)
        else:
            n = self.layernorm(m, mw.norm_w, mw.norm_b)
        f1 = self.dense(n, mw.fc1.values, mw.fc1_b)
        out = self.dense(self.gelu(f1), mw.fc2.values, mw.fc2_b)
        rec(f"{name}.merged_in", m)
        for part, rows in (("norm", n), ("fc1", f1)):
            for t in range(m.shape[0]):
                rec(f"{name}.{part}.tok{t}", rows[t])
        return out

    def forward(self, pixels: np.ndarray, rec: Record = lambda n, v: None) -> BoardVisionOutput:
        """spec/numerics.md §board-vision the whole tower on one image's pixel buffer
        [H', W', 3] (ref/qwen3_vl/board/preprocess.py)."""
        c, w = self.config, self.weights
        rec("vision.pixels_hwc", pixels)
        x, gh, gw = self.embed(pixels, rec)
        rot = ops.rotary_table(gh, gw, c.head_dim)
        rec("vision.rot_cos", rot[0])
        rec("vision.rot_sin", rot[1])
        ds_idx = c.deepstack_visual_indexes
        deepstack = []
        for i, bw in enumerate(w.blocks):
            x = self.block(i, bw, x, rot, rec)
            if i in ds_idx:
                d = ds_idx.index(i)  # the first DeepStack merger fed by block i
                deepstack.append(self.merger(f"ds{d}", w.deepstack[d], x, gh, gw, False, rec))
                rec(f"vision.deepstack{d}", deepstack[-1])
        out = self.merger("merger", w.merger, x, gh, gw, True, rec)
        rec("vision.merger_out", out)
        geometry = (pixels.shape[0], pixels.shape[1], gh, gw, out.shape[0])
        rec("vision.geometry_hw_grid_ntok", np.array(geometry, np.int32))
        return BoardVisionOutput(out, tuple(deepstack))


def check_pixels(pixels: np.ndarray, c: VisionConfig) -> tuple[int, int]:
    """The grid (gh, gw) of a pixel buffer; `vqf.bind.vision_input` unless it is float32
    [H', W', 3] with whole patches and at least 2×2 of them (one visual token)."""
    p = c.patch_size
    shape = tuple(np.shape(pixels))
    ok = len(shape) == 3 and shape[2] == c.in_channels and np.asarray(pixels).dtype == F32
    if ok and shape[0] % p == 0 and shape[1] % p == 0 and min(shape[:2]) >= 2 * p:
        return shape[0] // p, shape[1] // p
    raise InvalidError(
        "vqf.bind.vision_input",
        f"a board pixel buffer {np.asarray(pixels).dtype} {list(shape)}: the tower takes float32 "
        f"[H, W, {c.in_channels}] with sides multiples of {p}, at least {2 * p}",
        path="image",
    )
