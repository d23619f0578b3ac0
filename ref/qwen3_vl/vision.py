"""The Qwen3-VL vision tower as a textbook (spec/models.md §qwen3-vl "Vision tower"; the arithmetic
of spec/numerics.md §vision).

Patch-major like the text prefill: each step runs over all patches of all images before the next.
Images are concatenated along the patch axis, each with its own grid; attention stays inside one
image. Linears go through the profile's `Kernels.matvec` (Q8_0 block weights by the profile's
`quantized_matmul` rule, F32 weights by the canonical dot), then `⊕ bias`.

Trace names (N = patches of all images, M = N/4 merge windows):
  vision.patch_embed, vision.pos_embed, vision.embed                         [N, D]
  vision.blocks.L.{norm1, q_rope, k_rope, attn, proj, attn_residual, norm2, fc2,
                   mlp_residual} [N, D];  vision.blocks.L.qkv [N, 3D];
  vision.blocks.L.{fc1, gelu} [N, Iv]
  vision.deepstack.J.{norm, fc1, gelu} [M, mi];  vision.deepstack.J [M, O]
  vision.merger.norm [N, D];  vision.merger.{fc1, gelu} [M, mi];  vision.merger [M, O]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from weightfile.ref.layers.trace import TraceHook, as_rows
from weightfile.ref.numerics.attention import attend_head
from weightfile.ref.numerics.f32 import ZERO
from weightfile.ref.numerics.kernels import Kernels, kernels_for
from weightfile.ref.numerics.matrix import Matrix
from weightfile.ref.numerics.rope import apply_rope
from weightfile.spec.errors import InvalidError
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .config import MergerWeights, VisionBlockWeights, VisionConfig, VisionWeights
from .numerics import Rotary2D, add_bias, bilinear_row, gelu_erf, gelu_tanh, layernorm

Vec = list[np.float32]

#: One block's operations, in recording order (vision.blocks.L.<op>).
BLOCK_OPS = (
    "norm1", "qkv", "q_rope", "k_rope", "attn", "proj", "attn_residual", "norm2", "fc1", "gelu",
    "fc2", "mlp_residual",
)  # fmt: skip
MERGER_OPS = ("norm", "fc1", "gelu")


@dataclass(frozen=True)
class VisionInput:
    """One image for the tower: pixel_values [gh·gw, 3·T·P·P] in merge-window order, its grid."""

    pixel_values: np.ndarray
    grid_thw: tuple[int, int, int]


@dataclass(frozen=True)
class VisionOutput:
    """The merger rows (image-token embeddings) and one DeepStack feature per index, all [M, O]."""

    embeds: np.ndarray
    deepstack: tuple[np.ndarray, ...]


def patch_coordinates(gh: int, gw: int, merge: int = 2) -> list[tuple[int, int]]:
    """spec/models.md §qwen3-vl merge-window order: row n is the patch (2·by + my, 2·bx + mx)."""
    out = []
    for n in range(gh * gw):
        b, m = divmod(n, merge * merge)
        by, bx = divmod(b, gw // merge)
        my, mx = divmod(m, merge)
        out.append((merge * by + my, merge * bx + mx))
    return out


def window(rows: list[Vec], start: int, unit: int) -> Vec:
    """Rows start … start+unit−1 side by side: one merge window (spec/numerics.md §vision-merge)."""
    out: Vec = []
    for r in rows[start : start + unit]:
        out += r
    return out


def check_inputs(c: VisionConfig, images: Sequence[VisionInput]) -> None:
    """Refuse an image the tower cannot take: `vqf.bind.vision_input` names what is wrong."""
    m = c.spatial_merge_size
    for i, im in enumerate(images):
        t, gh, gw = im.grid_thw
        pv = np.asarray(im.pixel_values)
        bad = t != 1 or gh < m or gw < m or gh % m or gw % m
        if bad or pv.shape != (gh * gw, c.patch_dim) or pv.dtype != np.float32:
            raise InvalidError(
                "vqf.bind.vision_input",
                f"image {i}: grid {im.grid_thw} with pixel_values {pv.dtype} {list(pv.shape)}; "
                f"the tower takes one frame, even sides >= {m}, rows of {c.patch_dim} float32",
                path=f"images[{i}]",
            )


class VisionTower:
    """The tower bound to weights and a numerics profile."""

    def __init__(
        self, config: VisionConfig, weights: VisionWeights, profile: NumericsProfile = CANONICAL
    ) -> None:
        self.config = config
        self.weights = weights
        self.kernels: Kernels = kernels_for(profile)
        self.rotary = Rotary2D(config.rope_theta, config.head_dim)

    # --- one operation per method ---------------------------------------------------------

    def linear(self, m: Matrix, bias: np.ndarray, x: Vec) -> Vec:
        """spec/numerics.md §vision-linear y = W x ⊕ b; an input shorter than W's columns (fc2's
        padded columns, spec/vqf.md §vision-tensors) is extended with +0.0."""
        if len(x) < m.shape[1]:
            x = list(x) + [ZERO] * (m.shape[1] - len(x))
        return add_bias(self.kernels.matvec(m, x), bias)

    def norm(self, x: Vec, w: np.ndarray, b: np.ndarray) -> Vec:
        return layernorm(x, w, b, self.config.eps)

    def rope(self, v: Vec, rc: tuple[int, int]) -> Vec:
        """spec/numerics.md §vision-rotary the 2-D rotary on every head of one patch."""
        cos, sin = self.rotary.cos_sin(*rc)
        hd = self.config.head_dim
        out: Vec = []
        for h in range(0, len(v), hd):
            out += apply_rope(v[h : h + hd], cos, sin)
        return out

    def attention(self, q: list[Vec], k: list[Vec], v: list[Vec], segments: list[range]) -> list:
        """spec/numerics.md §vision-attention bidirectional attention inside each image, per
        head."""
        hd, out = self.config.head_dim, [[] for _ in q]
        for seg in segments:
            for h in range(0, len(q[0]), hd):
                keys = [k[j][h : h + hd] for j in seg]
                vals = [v[j][h : h + hd] for j in seg]
                for t in seg:
                    out[t] += attend_head(
                        q[t][h : h + hd], keys, vals, self.kernels.dot, self.kernels.softmax
                    )
        return out

    # --- blocks -------------------------------------------------------------------------------

    def block(self, i: int, bw: VisionBlockWeights, x: list[Vec], rc, segments, hook) -> list:
        """x += proj(attn(norm1 x)); x += fc2(gelu_tanh(fc1(norm2 x)))."""
        k, d = self.kernels, self.config.hidden_size
        n1 = [self.norm(v, bw.norm1_w, bw.norm1_b) for v in x]
        qkv = [self.linear(bw.qkv, bw.qkv_b, v) for v in n1]
        q = [self.rope(v[:d], p) for v, p in zip(qkv, rc, strict=True)]
        kk = [self.rope(v[d : 2 * d], p) for v, p in zip(qkv, rc, strict=True)]
        att = self.attention(q, kk, [v[2 * d :] for v in qkv], segments)
        o = [self.linear(bw.proj, bw.proj_b, v) for v in att]
        h = [k.add(a, b) for a, b in zip(x, o, strict=True)]
        n2 = [self.norm(v, bw.norm2_w, bw.norm2_b) for v in h]
        f1 = [self.linear(bw.fc1, bw.fc1_b, v) for v in n2]
        g = [[gelu_tanh(e) for e in v] for v in f1]
        f2 = [self.linear(bw.fc2, bw.fc2_b, v) for v in g]
        out = [k.add(a, b) for a, b in zip(h, f2, strict=True)]
        rows = dict(
            norm1=n1, qkv=qkv, q_rope=q, k_rope=kk, attn=att, proj=o, attn_residual=h, norm2=n2,
            fc1=f1, gelu=g, fc2=f2, mlp_residual=out,
        )  # fmt: skip
        for op in BLOCK_OPS:
            hook(f"vision.blocks.{i}.{op}", rows[op])
        return out

    def merge(
        self, name: str, mw: MergerWeights, x: list[Vec], post_shuffle: bool, gelu: str, hook
    ) -> list:
        """spec/models.md §qwen3-vl steps 5-6, §vision-variants: windows of 4 patches side by
        side, LayerNorm (over 4D after the shuffle, or over D before it), fc1, GELU (`gelu`:
        "erf" or "tanh"), fc2."""
        unit = self.config.spatial_merge_size**2
        if post_shuffle:
            windows = [window(x, w, unit) for w in range(0, len(x), unit)]
            n = [self.norm(v, mw.norm_w, mw.norm_b) for v in windows]
            hook(f"{name}.norm", n)
        else:
            pre = [self.norm(v, mw.norm_w, mw.norm_b) for v in x]
            hook(f"{name}.norm", pre)
            n = [window(pre, w, unit) for w in range(0, len(pre), unit)]
        f1 = [self.linear(mw.fc1, mw.fc1_b, v) for v in n]
        act = gelu_erf if gelu == "erf" else gelu_tanh
        g = [[act(e) for e in v] for v in f1]
        out = [self.linear(mw.fc2, mw.fc2_b, v) for v in g]
        hook(f"{name}.fc1", f1)
        hook(f"{name}.gelu", g)
        hook(name, out)
        return out

    def forward(self, images: Sequence[VisionInput], trace: TraceHook | None = None):
        """All images through the tower; a VisionOutput with rows in image order."""
        c, w = self.config, self.weights
        check_inputs(c, images)

        def hook(name: str, rows: list[Vec]) -> None:
            if trace is not None:
                trace(name, as_rows(rows))

        rows: list[np.ndarray] = []
        rc: list[tuple[int, int]] = []
        pos: list[Vec] = []
        segments: list[range] = []
        for im in images:
            _, gh, gw = im.grid_thw
            coords = patch_coordinates(gh, gw, c.spatial_merge_size)
            segments.append(range(len(rc), len(rc) + len(coords)))
            rows += list(np.asarray(im.pixel_values, np.float32))
            rc += coords
            pos += [bilinear_row(w.pos_embed, r, cc, gh, gw, c.side) for r, cc in coords]
        pe = [self.linear(w.patch_embed, w.patch_bias, list(r)) for r in rows]
        x = [self.kernels.add(a, b) for a, b in zip(pe, pos, strict=True)]
        hook("vision.patch_embed", pe)
        hook("vision.pos_embed", pos)
        hook("vision.embed", x)
        deepstack = []
        for i, bw in enumerate(w.blocks):
            x = self.block(i, bw, x, rc, segments, hook)
            if i in c.deepstack_visual_indexes:
                j = c.deepstack_visual_indexes.index(i)
                name = f"vision.deepstack.{j}"
                deepstack.append(as_rows(self.merge(name, w.deepstack[j], x, True, "erf", hook)))
        final = self.merge(
            "vision.merger", w.merger, x, c.merger_postshuffle_norm, c.merger_gelu, hook
        )
        embeds = as_rows(final)
        return VisionOutput(embeds, tuple(deepstack))
