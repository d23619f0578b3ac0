"""The engine's text tower with images (spec/numerics.md §board-vl-prefill): the multimodal
prefill that puts the board vision tower's visual tokens in the image-token rows, rotates with
interleaved MRoPE, attends over the INT8 cache with the multimodal kernel, adds the DeepStack
features after the first layers, and the decode steps that continue from the MRoPE text
position.

Read from the engine's source, **not checked against engine logits** (no pack has them). The
functions take the dense board model (ref or fast: `ref.qwen3.board.BoardModel` or its C twin)
and call its own norms, products and MLP, so both engines run the same steps; the operations the
text-only paths lack (MRoPE tables, the multimodal attention) are here, in NumPy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from weightfile.ref.qwen3.board.attention import attention_scale
from weightfile.ref.qwen3.board.libm import cosf, expf, sinf
from weightfile.ref.qwen3.board.model import MINI_BATCH
from weightfile.ref.qwen3.board.rope import inv_freq

F32 = np.float32
Record = Callable[[str, np.ndarray], None]


def _ignore(name: str, value: np.ndarray) -> None:
    pass


@dataclass(frozen=True)
class Positions:
    """Per prompt token: the (t, h, w) MRoPE position, the visual row it takes (−1: a text
    token), and the text position decoding continues from."""

    thw: tuple[tuple[int, int, int], ...]
    visual_row: tuple[int, ...]
    next_text: int


def mrope_positions(ids: Sequence[int], image_id: int, grids: Sequence[tuple[int, int]]):
    """spec/numerics.md §board-vl-positions text tokens count up from 0 (t = h = w); the k-th
    image token of an image with a merged grid (th, tw) sits at text_pos + (0, k // tw, k % tw)
    and takes visual row k of all images' rows; after an image's last token the text position
    advances by max(th, tw)."""
    starts = np.cumsum([0] + [th * tw for th, tw in grids])
    text, vis, thw, rows = 0, 0, [], []
    for tid in ids:
        if tid != image_id or vis >= starts[-1]:  # surplus image ids: text position, no row
            thw.append((text, text, text))
            rows.append(-1)
            text += tid != image_id
            continue
        r = int(np.searchsorted(starts, vis, side="right")) - 1
        th, tw = grids[r]
        k = vis - int(starts[r])
        thw.append((text, text + (k // tw) % th, text + k % tw))
        rows.append(vis)
        vis += 1
        if vis == starts[r + 1]:
            text += max(th, tw)
    return Positions(tuple(thw), tuple(rows), text)


def mrope_cos_sin(pos: tuple[int, int, int], theta: float, head_dim: int, sections):
    """spec/numerics.md §board-vl-mrope cosf and sinf of angle_j = fl(float(axis_j) · f_j), axis_j
    h when j % 3 = 1 and j < 3·sections[1], w when j % 3 = 2 and j < 3·sections[2], else t.
    [half] each"""
    t, h, w = pos
    s1, s2 = (sections[1], sections[2]) if len(sections) == 3 else (0, 0)
    axes = [h if j % 3 == 1 and j < 3 * s1 else w if j % 3 == 2 and j < 3 * s2 else t
            for j in range(head_dim // 2)]  # fmt: skip
    angles = [F32(a) * f for a, f in zip(axes, inv_freq(theta, head_dim), strict=True)]
    return np.array([cosf(a) for a in angles], F32), np.array([sinf(a) for a in angles], F32)


def mrope_heads(x: np.ndarray, cs: tuple[np.ndarray, np.ndarray], head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-vl-mrope every head rotated by one token's table (the rotate-half
    pairs of spec/numerics.md §board-rope, products rounded before the add)."""
    c, s = cs
    h = head_dim // 2
    heads = x.astype(F32).reshape(-1, head_dim)
    a, b = heads[:, :h], heads[:, h:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=1).reshape(-1)


def int8_cache(kv, upto: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The INT8 codes and scales of the first `upto` positions (k8, v8 [upto, kv, hd]; ks, vs
    [upto, kv]) of either engine's cache."""
    if hasattr(kv, "int8"):
        k8, v8, ks, vs = kv.int8(upto)
        return (np.asarray(k8), np.asarray(v8), np.asarray(ks), np.asarray(vs))
    return (np.stack(kv.k8[:upto]), np.stack(kv.v8[:upto]), np.stack(kv.ks[:upto]),
            np.stack(kv.vs[:upto]))  # fmt: skip


def mm_attend(q: np.ndarray, kv, upto: int, heads: int, head_dim: int) -> np.ndarray:
    """spec/numerics.md §board-vl-attention every query head over the INT8 cache's first `upto`
    positions: the float query against the key codes in one sequential chain, times the key's
    scale, times the attention scale; max from −1e9, libm expf, a float sum in position order,
    inv = 1 ⊘ sum; o_i ⊕= (p ⊗ v8_i) ⊗ vs, positions ascending. [heads·head_dim]"""
    k8, v8, ks, vs = int8_cache(kv, upto)
    kvh = k8.shape[1]
    scale = attention_scale(head_dim)
    out = []
    for h in range(heads):
        g = h * kvh // heads
        qh = q.reshape(heads, head_dim)[h].astype(F32)
        dot = np.zeros(upto, F32)
        for i in range(head_dim):
            dot = dot + qh[i] * k8[:, g, i].astype(F32)
        s = (dot * ks[:, g]) * scale
        m = max(F32(-1e9), s.max())
        e = [expf(v - m) for v in s]
        total = F32(0.0)
        for v in e:
            total = total + v
        inv = F32(1.0) / total
        o = np.zeros(head_dim, F32)
        for t in range(upto):
            o = o + (e[t] * inv * v8[t, g].astype(F32)) * vs[t, g]
        out.append(o)
    return np.concatenate(out)


@dataclass(frozen=True)
class VisualRows:
    """What the tower gave every image, concatenated in image order: the visual tokens [T, d]
    and one DeepStack feature [T, d] per DeepStack merger (layer l < count gets feature l)."""

    tokens: np.ndarray
    deepstack: tuple[np.ndarray, ...]


def qkv_rotated(model, lw, x: np.ndarray, pos, form: str):
    """Norm (tree8), Q/K/V and q/k norms through the model's own `attention_part` at position 0
    (its rotary there is the identity: cos 0 = 1, sin 0 = 0), then interleaved MRoPE at `pos`
    (spec/numerics.md §board-vl-prefill)."""
    c = model.config
    qn, kn, v, _ = model.attention_part(lw, x, 0, "decode", form, _ignore)
    cs = mrope_cos_sin(pos, c.rope_theta, c.head_dim, c.mrope_section or ())
    return mrope_heads(qn, cs, c.head_dim), mrope_heads(kn, cs, c.head_dim), v


def prefill_layer(model, i: int, xs: list, thw, rows, vis: VisualRows, cache, pos0: int):
    """spec/numerics.md §board-vl-prefill one layer over one mini-batch: every token's Q/K/V and
    cache store first, then per token the multimodal attention (causal), o_proj + residual, the
    MLP (tree8 norm, prefill forms) and, in the first layers, the DeepStack add."""
    c, lw, n = model.config, model.weights.layers[i], len(xs)
    forms = [model.prefill_form(t, n) for t in range(n)]
    parts = [qkv_rotated(model, lw, xs[t], thw[t], forms[t]) for t in range(n)]
    for _q, k, v in parts:
        cache[i].append(k.reshape(-1, c.head_dim), v.reshape(-1, c.head_dim))
    out = []
    for t, (q, _, _) in enumerate(parts):
        att = mm_attend(q, cache[i], pos0 + t + 1, c.num_attention_heads, c.head_dim)
        h = xs[t] + model.project(lw.o_proj, att, forms[t])
        y = model.mlp_part(lw, h, "decode", forms[t], _ignore)
        if i < len(vis.deepstack) and rows[t] >= 0:
            y = y + vis.deepstack[i][rows[t]]
        out.append(y)
    return out


def multimodal_prefill(model, ids: Sequence[int], p: Positions, vis: VisualRows, cache):
    """spec/numerics.md §board-vl-prefill the whole prompt in mini-batches of MINI_BATCH tokens:
    image-token rows take their visual token, the others their embedding; logits of the last
    token [vocab]."""
    x = None
    for start in range(0, len(ids), MINI_BATCH):
        end = min(start + MINI_BATCH, len(ids))
        rows = p.visual_row[start:end]
        xs = [vis.tokens[r].astype(F32) if r >= 0 else model.embed(t)
              for t, r in zip(ids[start:end], rows, strict=True)]  # fmt: skip
        pos0 = len(model_keys(cache[0]))
        for i in range(model.config.num_hidden_layers):
            xs = prefill_layer(model, i, xs, p.thw[start:end], rows, vis, cache, pos0)
        x = xs[-1]
    return model.logits(x, _ignore)


def model_keys(kv) -> Sequence:
    """The cached positions of either engine's cache (BoardKV keeps lists, FastKV arrays)."""
    return kv.keys


def decode_at(model, token: int, cache, pos: int, rec: Record = _ignore) -> np.ndarray:
    """spec/numerics.md §board-vl-decode one decode step at the MRoPE text position `pos`
    (not the cache length): otherwise spec/numerics.md §board-decode-step.
    [vocab]"""
    x = model.embed(token)
    rec("embedding", x)
    c = model.config
    for i, lw in enumerate(model.weights.layers):
        lrec = lambda name, value, i=i: rec(f"layer{i}." + name, value)  # noqa: E731
        qr, kr, v, _ = model.attention_part(lw, x, pos, "decode", "decode", lrec)
        cache[i].append(kr.reshape(-1, c.head_dim), v.reshape(-1, c.head_dim))
        att = model.attend(qr, cache[i], len(model_keys(cache[i])), "decode")
        h = x + model.project(lw.o_proj, att, "decode")
        lrec("attn_out", att)
        lrec("o_proj_residual", h)
        x = model.mlp_part(lw, h, "decode", "decode", lrec)
    return model.logits(x, rec)
