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
from weightfile.ref.qwen3_vl.config import MergerWeights, VisionConfig, VisionWeights
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

    # --- the steps, one method each (the tower below and weightfile/replay.py call them) ------

    def grid(self, pixels: np.ndarray) -> tuple[int, int]:
        """The patch grid (gh, gw) of a pixel buffer (`vqf.bind.vision_input` when it has none)."""
        return check_pixels(pixels, self.config)

    def geometry(self, pixels: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-names `vision.geometry_hw_grid_ntok`: int32 [H', W',
        gh, gw, tokens], the tokens those of the 2×2 merge (spec/numerics.md
        §board-vision-merge)."""
        gh, gw = self.grid(pixels)
        return np.array((pixels.shape[0], pixels.shape[1], gh, gw, (gh // 2) * (gw // 2)), np.int32)

    def embed_patches(self, pixels: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-patch the patch embedding [P, vh] (raster order)."""
        c, w = self.config, self.weights
        self.grid(pixels)
        rows = ops.patch_rows(pixels, c.patch_size, c.temporal_patch_size)
        return self.patch_embed(rows, w.patch_embed.values, w.patch_bias)

    def add_positions(self, pe: np.ndarray, gh: int, gw: int) -> np.ndarray:
        """spec/numerics.md §board-vision-pos the embedding plus the bilinear position rows."""
        return pe + ops.position_rows(self.weights.pos_embed, gh, gw)

    def rotary(self, gh: int, gw: int) -> tuple[np.ndarray, np.ndarray]:
        """spec/numerics.md §board-vision-rotary the table (cos, sin) [P, hd] of a gh×gw grid."""
        return ops.rotary_table(gh, gw, self.config.head_dim)

    def ln1(self, i: int, x: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-layernorm block i's first LayerNorm."""
        bw = self.weights.blocks[i]
        return self.layernorm(x, bw.norm1_w, bw.norm1_b)

    def qkv(self, i: int, n1: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-linear block i's q/k/v, head-major [3, nh, P, hd]."""
        c, bw = self.config, self.weights.blocks[i]
        y = self.linear(bw.qkv, bw.qkv_b, n1)
        return y.reshape(n1.shape[0], 3, c.num_heads, c.head_dim).transpose(1, 2, 0, 3)

    def rope(self, qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-rotary q and k rotated, v as it is [3, nh, P, hd]."""
        return np.stack([ops.rotate(qkv[0], cos, sin), ops.rotate(qkv[1], cos, sin), qkv[2]])

    def attention(self, roped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """spec/numerics.md §board-vision-attention every head of roped [3, nh, P, hd]: (the heads
        side by side [P, vh], the first query block's scaled scores [nh, min(32, P), P])."""
        heads = [self.attend(roped[0, h], roped[1, h], roped[2, h]) for h in range(roped.shape[1])]
        att = np.concatenate([o for o, _ in heads], axis=1)
        return att, np.stack([s[:SCORE_QUERIES] for _, s in heads])

    def proj(self, i: int, att: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-linear block i's output projection."""
        bw = self.weights.blocks[i]
        return self.linear(bw.proj, bw.proj_b, att)

    def residual(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-block a residual add (resid1, out)."""
        return x + y

    def ln2(self, i: int, r1: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-layernorm block i's second LayerNorm."""
        bw = self.weights.blocks[i]
        return self.layernorm(r1, bw.norm2_w, bw.norm2_b)

    def fc1(self, i: int, n2: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-linear block i's fc1 [P, vf]."""
        bw = self.weights.blocks[i]
        return self.linear(bw.fc1, bw.fc1_b, n2)

    def gelu_padded(self, i: int, fc1: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-ffn-stride fc1's rows through the padded-stride buffer,
        GELU on the first vf of each padded row, zeros after [P, vfp]."""
        buf = ffn_stride_buffer(fc1, self.weights.blocks[i].fc2.shape[1])
        vf = self.config.intermediate_size
        return np.concatenate([self.gelu(buf[:, :vf]), np.zeros_like(buf[:, vf:])], axis=1)

    def fc2(self, i: int, act: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-linear block i's fc2 [P, vh] (before the residual)."""
        bw = self.weights.blocks[i]
        return self.linear(bw.fc2, bw.fc2_b, act)

    def merger_weights(self, name: str) -> tuple[MergerWeights, bool]:
        """A merger's weights by its dump name (`ds{d}` or `merger`) and whether its LayerNorm is
        per vh chunk (the main merger's) or over the whole window (spec/numerics.md
        §board-vision-mergers)."""
        if name == "merger":
            return self.weights.merger, True
        return self.weights.deepstack[int(name.removeprefix("ds"))], False

    def merger_norm(self, name: str, m: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-mergers the LayerNorm of merged windows [T, 4·vh]."""
        mw, chunked = self.merger_weights(name)
        if not chunked:
            return self.layernorm(m, mw.norm_w, mw.norm_b)
        n = self.layernorm(m.reshape(m.shape[0], -1, self.config.hidden_size), mw.norm_w, mw.norm_b)
        return n.reshape(m.shape)

    def merger_fc1(self, name: str, n: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-mergers the merger's fc1 (before GELU) [T, 4·vh]."""
        mw, _ = self.merger_weights(name)
        return self.dense(n, mw.fc1.values, mw.fc1_b)

    def merger_out(self, name: str, f1: np.ndarray) -> np.ndarray:
        """spec/numerics.md §board-vision-mergers GELU, then the merger's fc2 [T, out]."""
        mw, _ = self.merger_weights(name)
        return self.dense(self.gelu(f1), mw.fc2.values, mw.fc2_b)

    # --- the tower ------------------------------------------------------------------------------

    def block(self, i: int, x: np.ndarray, rot, rec: Record) -> np.ndarray:
        """spec/numerics.md §board-vision-block one ViT block: x + proj(attn(ln1 x)), then
        + fc2(gelu(fc1(ln2 ·))) through the padded-stride buffer."""
        n1 = self.ln1(i, x)
        qkv = self.qkv(i, n1)
        roped = self.rope(qkv, *rot)
        att, scores = self.attention(roped)
        proj = self.proj(i, att)
        r1 = self.residual(x, proj)
        n2 = self.ln2(i, r1)
        fc1 = self.fc1(i, n2)
        act = self.gelu_padded(i, fc1)
        fc2 = self.fc2(i, act)
        out = self.residual(r1, fc2)
        first = {f"scores.h{h}": s for h, s in enumerate(scores)} if i == 0 else {}
        named = dict(ln1=n1, qkv_headmajor=qkv, qkv_rope_headmajor=roped, **first, attn=att)
        named |= dict(proj=proj, resid1=r1, ln2=n2, fc1=fc1, gelu_padded=act, fc2=fc2, out=out)
        for name, value in named.items():  # in the order computed (diff's first divergence)
            rec(f"vit.layer{i}.{name}", value)
        return out

    def merger(self, name: str, x: np.ndarray, gh: int, gw: int, rec: Record) -> np.ndarray:
        """spec/numerics.md §board-vision-mergers the 2×2 merge of a block's output, then merger
        `name` (`ds{d}` or `merger`): LayerNorm, fc1, GELU, fc2. [T, out]"""
        m = merge_windows(x, gh, gw)
        n = self.merger_norm(name, m)
        f1 = self.merger_fc1(name, n)
        out = self.merger_out(name, f1)
        rec(f"{name}.merged_in", m)
        for part, rows in (("norm", n), ("fc1", f1)):
            for t in range(m.shape[0]):
                rec(f"{name}.{part}.tok{t}", rows[t])
        return out

    def forward(self, pixels: np.ndarray, rec: Record = lambda n, v: None) -> BoardVisionOutput:
        """spec/numerics.md §board-vision the whole tower on one image's pixel buffer
        [H', W', 3] (ref/qwen3_vl/board/preprocess.py)."""
        rec("vision.pixels_hwc", pixels)
        gh, gw = self.grid(pixels)
        pe = self.embed_patches(pixels)
        rec("vision.patch_embed", pe)
        x = self.add_positions(pe, gh, gw)
        rec("vision.patch_plus_pos", x)
        rot = self.rotary(gh, gw)
        rec("vision.rot_cos", rot[0])
        rec("vision.rot_sin", rot[1])
        ds_idx = self.config.deepstack_visual_indexes
        deepstack = []
        for i in range(len(self.weights.blocks)):
            x = self.block(i, x, rot, rec)
            if i in ds_idx:
                d = ds_idx.index(i)  # the first DeepStack merger fed by block i
                deepstack.append(self.merger(f"ds{d}", x, gh, gw, rec))
                rec(f"vision.deepstack{d}", deepstack[-1])
        out = self.merger("merger", x, gh, gw, rec)
        rec("vision.merger_out", out)
        rec("vision.geometry_hw_grid_ntok", self.geometry(pixels))
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
