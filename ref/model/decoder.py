"""The Qwen3 dense decoder forward pass (qwen-math §1.1; spec/numerics.md §9).

Layer-major, like a prefill: each layer runs over all tokens of the call before the next layer.
Every arithmetic step goes through the profile's `Kernels`, so the same code runs under any
numerics profile. Vectors are lists of float32 scalars; `[T][...]` comments give shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from weightfile.ref.numerics.kernels import Kernels, kernels_for
from weightfile.ref.numerics.rope import apply_rope
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .config import Qwen3Config
from .trace import TraceHook, as_rows
from .weights import LayerWeights, ModelWeights, check_shapes

Vec = list[np.float32]
PositionIds = Sequence[Sequence[int]]  # [T][3]: MRoPE (t, h, w) ids; text tokens have t = h = w


@dataclass
class KVCache:
    """Per layer, per position: the kv-head vectors of K (after k_norm and RoPE) and V."""

    keys: list[list[list[Vec]]] = field(default_factory=list)  # [layer][pos][kv_head][head_dim]
    values: list[list[list[Vec]]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.keys[0]) if self.keys else 0


def split_heads(v: Vec, head_dim: int) -> list[Vec]:
    """[heads*head_dim] -> [heads][head_dim]."""
    return [v[h * head_dim : (h + 1) * head_dim] for h in range(len(v) // head_dim)]


def text_position_ids(start: int, count: int) -> list[tuple[int, int, int]]:
    """qwen-math §1.2: a text token at position p has MRoPE ids (p, p, p)."""
    return [(p, p, p) for p in range(start, start + count)]


class Qwen3Model:
    """A Qwen3 dense decoder bound to weights and a numerics profile."""

    def __init__(
        self, config: Qwen3Config, weights: ModelWeights, profile: NumericsProfile = CANONICAL
    ) -> None:
        check_shapes(config, weights)
        self.config = config
        self.weights = weights
        self.kernels: Kernels = kernels_for(profile)
        self.rope = self.kernels.rope_tables(config.theta_f32, config.head_dim)

    def new_cache(self) -> KVCache:
        n = self.config.num_hidden_layers
        return KVCache(keys=[[] for _ in range(n)], values=[[] for _ in range(n)])

    # --- one operation per method -------------------------------------------------------

    def embed(self, token_ids: Sequence[int]) -> list[Vec]:
        """Token embedding: a row lookup, no arithmetic. [T][hidden]"""
        vocab = self.config.vocab_size
        for t in token_ids:
            if not 0 <= t < vocab:
                raise ValueError(f"token id {t} outside the vocabulary of {vocab}")
        return [list(self.weights.embed[t]) for t in token_ids]

    def head_norm(self, vectors: Vec, weight: np.ndarray) -> Vec:
        """q_norm / k_norm: RMSNorm over head_dim per head, before RoPE."""
        out: Vec = []
        for head in split_heads(vectors, self.config.head_dim):
            out += self.kernels.rmsnorm(head, weight, self.config.eps_f32)
        return out

    def rope_heads(self, vectors: Vec, position_ids: Sequence[int]) -> Vec:
        """RoPE with rotate_half on every head of one token."""
        cos, sin = self.rope.cos_sin(position_ids, self.config.mrope_section)
        out: Vec = []
        for head in split_heads(vectors, self.config.head_dim):
            out += apply_rope(head, cos, sin)
        return out

    def attend(self, q: Vec, keys: list[list[Vec]], values: list[list[Vec]]) -> Vec:
        """Causal GQA attention of one token over cached positions 0..p. [heads*head_dim]"""
        c, k = self.config, self.kernels
        scale = np.float32(1) / np.sqrt(np.float32(c.head_dim))  # §9: 1 / sqrt(head_dim)
        out: Vec = []
        for h, qh in enumerate(split_heads(q, c.head_dim)):
            kv = h // c.group_size  # query head h reads kv head h // (heads / kv_heads)
            scores = [k.dot(qh, pos_keys[kv]) * scale for pos_keys in keys]
            probs = k.softmax(scores)
            acc = [np.float32(0)] * c.head_dim
            for p, pos_values in zip(probs, values, strict=True):  # ascending positions
                acc = [a + p * v for a, v in zip(acc, pos_values[kv], strict=True)]
            out += acc
        return out

    def swiglu(self, gate: Vec, up: Vec) -> Vec:
        """SwiGLU: silu(gate) * up, element-wise."""
        return [self.kernels.silu(g) * u for g, u in zip(gate, up, strict=True)]

    # --- the layer and the model -----------------------------------------------------------

    def attention_block(
        self, i: int, lw: LayerWeights, x: list[Vec], pos: PositionIds, cache: KVCache, hook
    ) -> list[Vec]:
        """h = x + o_proj(attn(input_layernorm(x))) for every token of the call."""
        k, eps = self.kernels, self.config.eps_f32
        name = f"layers.{i}."
        n = [k.rmsnorm(v, lw.attn_norm, eps) for v in x]
        q = [k.matvec(lw.q_proj, v) for v in n]
        kk = [k.matvec(lw.k_proj, v) for v in n]
        vv = [k.matvec(lw.v_proj, v) for v in n]
        qn = [self.head_norm(v, lw.q_norm) for v in q]
        kn = [self.head_norm(v, lw.k_norm) for v in kk]
        qr = [self.rope_heads(v, p) for v, p in zip(qn, pos, strict=True)]
        kr = [self.rope_heads(v, p) for v, p in zip(kn, pos, strict=True)]
        start = len(cache.keys[i])
        for t in range(len(x)):
            cache.keys[i].append(split_heads(kr[t], self.config.head_dim))
            cache.values[i].append(split_heads(vv[t], self.config.head_dim))
        att = [
            self.attend(qr[t], cache.keys[i][: start + t + 1], cache.values[i][: start + t + 1])
            for t in range(len(x))
        ]
        o = [k.matvec(lw.o_proj, v) for v in att]
        h = [k.add(a, b) for a, b in zip(x, o, strict=True)]
        for op, rows in (
            ("attn_norm", n), ("q_proj", q), ("k_proj", kk), ("v_proj", vv), ("q_norm", qn),
            ("k_norm", kn), ("q_rope", qr), ("k_rope", kr), ("attn", att), ("o_proj", o),
            ("attn_residual", h),
        ):  # fmt: skip
            hook(name + op, rows)
        return h

    def mlp_block(self, i: int, lw: LayerWeights, h: list[Vec], hook) -> list[Vec]:
        """out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h)."""
        k, eps = self.kernels, self.config.eps_f32
        n = [k.rmsnorm(v, lw.ffn_norm, eps) for v in h]
        g = [k.matvec(lw.gate_proj, v) for v in n]
        u = [k.matvec(lw.up_proj, v) for v in n]
        s = [self.swiglu(a, b) for a, b in zip(g, u, strict=True)]
        d = [k.matvec(lw.down_proj, v) for v in s]
        out = [k.add(a, b) for a, b in zip(h, d, strict=True)]
        for op, rows in (
            ("ffn_norm", n), ("gate_proj", g), ("up_proj", u), ("swiglu", s), ("down_proj", d),
            ("ffn_residual", out),
        ):  # fmt: skip
            hook(f"layers.{i}.{op}", rows)
        return out

    def forward(
        self,
        token_ids: Sequence[int],
        cache: KVCache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
    ) -> np.ndarray:
        """Run T tokens after the cache's contents; returns logits float32 [T, vocab].

        position_ids defaults to text positions continuing the cache (MRoPE ids p, p, p).
        """
        if not token_ids:
            raise ValueError("forward needs at least one token")
        pos = position_ids or text_position_ids(cache.length, len(token_ids))
        if len(pos) != len(token_ids):
            raise ValueError("position_ids must have one (t, h, w) triple per token")

        def hook(name: str, rows: list[Vec]) -> None:
            if trace is not None:
                trace(name, as_rows(rows))

        x = self.embed(token_ids)
        hook("embed", x)
        for i, lw in enumerate(self.weights.layers):
            x = self.attention_block(i, lw, x, pos, cache, hook)
            x = self.mlp_block(i, lw, x, hook)
        n = [self.kernels.rmsnorm(v, self.weights.final_norm, self.config.eps_f32) for v in x]
        hook("final_norm", n)
        head = self.weights.output_matrix()
        logits = [self.kernels.matvec(head, v) for v in n]
        hook("logits", logits)
        return as_rows(logits)
