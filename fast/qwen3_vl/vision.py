"""The Qwen3-VL vision tower on whole [patches, width] arrays, bit for bit
ref/qwen3_vl/vision.py (spec/models.md §qwen3-vl "Vision tower"; spec/numerics.md §vision).

Every step runs over all patches of all images at once: the linears are the matrix-matrix
products of fast/numerics/matrix.py (the `v_q8_*` matrices in the profile's spec/numerics.md
§quantized-matmul mode, the F32 ones by the spec/numerics.md §matmul dot) followed by `⊕ bias`;
LayerNorm and the per-image attention (query tiles) are fast/csrc/vision.c, the GELUs
fast/csrc/gelu.c; the residual and position adds are NumPy float32 additions (one rounding each,
as in the reference). The trace hook gets the reference's names, in its order, with the same
bits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import FastMatrix, kernels
from weightfile.ref.layers.trace import TraceHook
from weightfile.ref.qwen3_vl.config import VisionConfig
from weightfile.ref.qwen3_vl.vision import (
    BLOCK_OPS,
    VisionInput,
    VisionOutput,
    check_inputs,
    patch_coordinates,
)

from .numerics import FastRotary2D, bilinear_rows, gelu_erf, gelu_tanh, layernorm, rotate


class FastVisionTower:
    """The tower on weights whose matrices are FastMatrix views of the mapped file (the
    dataclasses of ref/qwen3_vl/config.py, holding FastMatrix where the reference holds a
    Matrix)."""

    def __init__(self, config: VisionConfig, weights, threads: int = 1) -> None:
        self.config = config
        self.weights = weights
        self.threads = threads
        self.rotary = FastRotary2D(config.rope_theta, config.head_dim)

    def linear(self, m: FastMatrix, bias: np.ndarray, x: np.ndarray) -> np.ndarray:
        """spec/numerics.md §vision-linear Y = X Wᵀ ⊕ b; input columns short of W's (fc2's padding,
        spec/vqf.md §vision-tensors) are +0.0. `m` is a FastMatrix or any product with `shape`
        and `matmat` (fast/qwen3_vl/dense.py: Hadamard inputs, row stacks)."""
        cols = m.shape[1]
        if x.shape[1] < cols:
            x = np.concatenate([x, np.zeros((x.shape[0], cols - x.shape[1]), np.float32)], 1)
        y = m.matmat(x, threads=self.threads)
        y += bias  # in place: one float32 rounding per element, as `y + bias`
        return y

    def norm(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return layernorm(x, w, b, self.config.eps, self.threads)

    def attention(self, q, k, v, seg_of: np.ndarray, seg_len: np.ndarray) -> np.ndarray:
        """spec/numerics.md §vision-attention every patch over the patches of its own image, per
        head."""
        c = self.config
        q, k, v = (np.ascontiguousarray(a, dtype=np.float32) for a in (q, k, v))
        out = np.empty_like(q)
        kernels().wf_attend_segments(
            address(q), address(k), address(v), q.shape[0], c.num_heads, c.head_dim,
            address(seg_of), address(seg_len), address(out), self.threads,
        )  # fmt: skip
        return out

    def block(self, i: int, bw, x: np.ndarray, cos, sin, seg_of, seg_len, hook) -> np.ndarray:
        """x += proj(attn(norm1 x)); x += fc2(gelu_tanh(fc1(norm2 x)))."""
        d, hd = self.config.hidden_size, self.config.head_dim
        n1 = self.norm(x, bw.norm1_w, bw.norm1_b)
        qkv = self.linear(bw.qkv, bw.qkv_b, n1)
        q = rotate(qkv[:, :d], cos, sin, hd, self.threads)
        kk = rotate(qkv[:, d : 2 * d], cos, sin, hd, self.threads)
        att = self.attention(q, kk, qkv[:, 2 * d :], seg_of, seg_len)
        o = self.linear(bw.proj, bw.proj_b, att)
        h = x + o
        n2 = self.norm(h, bw.norm2_w, bw.norm2_b)
        f1 = self.linear(bw.fc1, bw.fc1_b, n2)
        g = gelu_tanh(f1, self.threads)
        f2 = self.linear(bw.fc2, bw.fc2_b, g)
        out = h + f2
        if hook is not None:
            rows = dict(
                norm1=n1, qkv=qkv, q_rope=q, k_rope=kk, attn=att, proj=o, attn_residual=h,
                norm2=n2, fc1=f1, gelu=g, fc2=f2, mlp_residual=out,
            )  # fmt: skip
            for op in BLOCK_OPS:
                hook(f"vision.blocks.{i}.{op}", rows[op])
        return out

    def merge(
        self, name: str, mw, x: np.ndarray, post_shuffle: bool, gelu: str, hook
    ) -> np.ndarray:
        """spec/models.md §qwen3-vl steps 5-6, §vision-variants (spec/numerics.md §vision-merge):
        windows of merge² patches side by side (a reshape: the rows are in merge-window order),
        LayerNorm over 4D after the shuffle or over D before it, fc1, GELU (`gelu`), fc2."""
        unit = self.config.spatial_merge_size**2
        m = x.shape[0] // unit
        if post_shuffle:
            n = self.norm(x.reshape(m, -1), mw.norm_w, mw.norm_b)
            pre = n
        else:
            pre = self.norm(x, mw.norm_w, mw.norm_b)
            n = pre.reshape(m, -1)
        f1 = self.linear(mw.fc1, mw.fc1_b, n)
        g = (gelu_erf if gelu == "erf" else gelu_tanh)(f1, self.threads)
        out = self.linear(mw.fc2, mw.fc2_b, g)
        if hook is not None:
            hook(f"{name}.norm", pre)
            hook(f"{name}.fc1", f1)
            hook(f"{name}.gelu", g)
            hook(name, out)
        return out

    def forward(
        self, images: Sequence[VisionInput], trace: TraceHook | None = None
    ) -> VisionOutput:
        """All images through the tower; a VisionOutput with rows in image order."""
        c, w = self.config, self.weights
        check_inputs(c, images)

        def hook(name: str, rows: np.ndarray) -> None:
            if trace is not None:
                trace(name, np.array(rows, dtype=np.float32).reshape(rows.shape[0], -1))

        layer_hook = None if trace is None else hook
        pixels, coords, pos, seg_of, seg_len = [], [], [], [], []
        for im in images:
            _, gh, gw = im.grid_thw
            cs = patch_coordinates(gh, gw, c.spatial_merge_size)
            seg_of += [len(coords)] * len(cs)
            seg_len += [len(cs)] * len(cs)
            pixels.append(np.asarray(im.pixel_values, np.float32))
            pos.append(bilinear_rows(w.pos_embed, cs, gh, gw, c.side))
            coords += cs
        rows = np.concatenate(pixels) if pixels else np.zeros((0, c.patch_dim), np.float32)
        pos_rows = np.concatenate(pos) if pos else np.zeros((0, c.hidden_size), np.float32)
        cos, sin = self.rotary.cos_sin(coords) if coords else (None, None)
        seg_of_a = np.array(seg_of, dtype=np.int64)
        seg_len_a = np.array(seg_len, dtype=np.int64)
        pe = self.linear(w.patch_embed, w.patch_bias, rows)
        x = pe + pos_rows
        hook("vision.patch_embed", pe)
        hook("vision.pos_embed", pos_rows)
        hook("vision.embed", x)
        deepstack = []
        for i, bw in enumerate(w.blocks):
            x = self.block(i, bw, x, cos, sin, seg_of_a, seg_len_a, layer_hook)
            if i in c.deepstack_visual_indexes:
                j = c.deepstack_visual_indexes.index(i)
                name = f"vision.deepstack.{j}"
                deepstack.append(self.merge(name, w.deepstack[j], x, True, "erf", layer_hook))
        embeds = self.merge(
            "vision.merger", w.merger, x, c.merger_postshuffle_norm, c.merger_gelu, layer_hook
        )
        return VisionOutput(embeds, tuple(deepstack))
