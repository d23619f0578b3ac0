"""The Qwen3 dense decoder forward pass (qwen-math §1.1; spec/numerics.md §9).

Layer-major, like a prefill: each layer runs over all tokens of the call before the next layer.
Every arithmetic step goes through the profile's `Kernels`, so the same code runs under any
numerics profile. Vectors are lists of float32 scalars; `[T][...]` comments give shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.ref.numerics.kernels import Kernels, Site, kernels_for
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


def per_token(layer: int | None, tokens: int) -> Callable[..., list[Vec]]:
    """each(op, fn, rows_a, rows_b, ...): fn(a_t, b_t, ..., Site) for every token t, in order."""

    def each(op: str, fn: Callable[..., Vec], *rows: list[Vec]) -> list[Vec]:
        return [fn(*vs, Site(op, layer, t, tokens)) for t, vs in enumerate(zip(*rows, strict=True))]

    return each


def causal_attention(
    layer: int,
    q: list[Vec],
    k: list[Vec],
    v: list[Vec],
    caches: list[Any],
    head_dim: int,
    attend: Callable[[Vec, list[list[Vec]], list[list[Vec]], Site], Vec],
) -> list[Vec]:
    """Append each token's K/V heads to its own cache, then attend each token over positions
    0 .. its own of that cache (causal); caches[t] is token t's, a sequence's tokens in order."""
    ends = []  # token t attends to positions 0 .. ends[t]-1 of its own cache
    for t, cache in enumerate(caches):
        cache.keys[layer].append(split_heads(k[t], head_dim))
        cache.values[layer].append(split_heads(v[t], head_dim))
        ends.append(len(cache.keys[layer]))
    return [
        attend(
            q[t],
            c.keys[layer][: ends[t]],
            c.values[layer][: ends[t]],
            Site("attn", layer, t, len(q)),
        )
        for t, c in enumerate(caches)
    ]


def text_position_ids(start: int, count: int) -> list[tuple[int, int, int]]:
    """qwen-math §1.2: a text token at position p has MRoPE ids (p, p, p)."""
    return [(p, p, p) for p in range(start, start + count)]


def gather_requests(
    requests: Sequence[tuple[Sequence[int], Any, PositionIds | None]],
) -> tuple[list[int], list[Sequence[int]], list[Any]]:
    """A batch flattened to (token ids, position ids, each token's cache), requests in order.

    Each request needs its own cache (anything with a `length`); position_ids default to text
    positions continuing that cache (MRoPE ids p, p, p).
    """
    if len({id(c) for _, c, _ in requests}) != len(requests):
        raise ValueError("each request of a batch needs its own cache")
    tokens: list[int] = []
    pos: list[Sequence[int]] = []
    caches: list[Any] = []
    for token_ids, cache, position_ids in requests:
        if not token_ids:
            raise ValueError("forward needs at least one token")
        p = position_ids or text_position_ids(cache.length, len(token_ids))
        if len(p) != len(token_ids):
            raise ValueError("position_ids must have one (t, h, w) triple per token")
        tokens += token_ids
        pos += p
        caches += [cache] * len(token_ids)
    return tokens, pos, caches


def split_per_request(rows: list[Vec], requests: Sequence[tuple[Sequence[int], Any, Any]]) -> list:
    """The flattened rows split back per request, each a float32 [T_r, width] array."""
    out, at = [], 0
    for token_ids, _, _ in requests:
        out.append(as_rows(rows[at : at + len(token_ids)]))
        at += len(token_ids)
    return out


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

    def head_norm(self, vectors: Vec, weight: np.ndarray, site: Site) -> Vec:
        """q_norm / k_norm: RMSNorm over head_dim per head, before RoPE."""
        out: Vec = []
        for head in split_heads(vectors, self.config.head_dim):
            out += self.kernels.rmsnorm(head, weight, self.config.eps_f32, site)
        return out

    def rope_heads(self, vectors: Vec, position_ids: Sequence[int]) -> Vec:
        """RoPE with rotate_half on every head of one token."""
        cos, sin = self.rope.cos_sin(position_ids, self.config.mrope_section)
        out: Vec = []
        for head in split_heads(vectors, self.config.head_dim):
            out += apply_rope(head, cos, sin)
        return out

    def attend(self, q: Vec, keys: list[list[Vec]], values: list[list[Vec]], site: Site) -> Vec:
        """Causal GQA attention of one token over cached positions 0..p. [heads*head_dim]"""
        c = self.config
        out: Vec = []
        for h, qh in enumerate(split_heads(q, c.head_dim)):
            g = h // c.group_size  # query head h reads kv head h // (heads / kv_heads)
            out += self.kernels.attend(qh, [k[g] for k in keys], [v[g] for v in values], site)
        return out

    # --- the layer and the model -----------------------------------------------------------

    def attention_block(
        self, i: int, lw: LayerWeights, x: list[Vec], pos: PositionIds, caches: list[KVCache], hook
    ) -> list[Vec]:
        """h = x + o_proj(attn(input_layernorm(x))) for every token of the call.

        caches[t] is the cache of token t's sequence; tokens of one sequence come in order.
        """
        k, eps, hd = self.kernels, self.config.eps_f32, self.config.head_dim
        each = per_token(i, len(x))
        n = each("attn_norm", lambda v, s: k.rmsnorm(v, lw.attn_norm, eps, s), x)
        q = each("q_proj", lambda v, s: k.matvec(lw.q_proj, v, s), n)
        kk = each("k_proj", lambda v, s: k.matvec(lw.k_proj, v, s), n)
        vv = each("v_proj", lambda v, s: k.matvec(lw.v_proj, v, s), n)
        qn = each("q_norm", lambda v, s: self.head_norm(v, lw.q_norm, s), q)
        kn = each("k_norm", lambda v, s: self.head_norm(v, lw.k_norm, s), kk)
        qr = [self.rope_heads(v, p) for v, p in zip(qn, pos, strict=True)]
        kr = [self.rope_heads(v, p) for v, p in zip(kn, pos, strict=True)]
        att = causal_attention(i, qr, kr, vv, caches, hd, self.attend)
        o = each("o_proj", lambda v, s: k.matvec(lw.o_proj, v, s), att)
        h = each("attn_residual", k.add, x, o)
        for op, rows in (
            ("attn_norm", n), ("q_proj", q), ("k_proj", kk), ("v_proj", vv), ("q_norm", qn),
            ("k_norm", kn), ("q_rope", qr), ("k_rope", kr), ("attn", att), ("o_proj", o),
            ("attn_residual", h),
        ):  # fmt: skip
            hook(f"layers.{i}.{op}", rows)
        return h

    def mlp_block(self, i: int, lw: LayerWeights, h: list[Vec], hook) -> list[Vec]:
        """out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h)."""
        k, eps = self.kernels, self.config.eps_f32
        each = per_token(i, len(h))
        n = each("ffn_norm", lambda v, s: k.rmsnorm(v, lw.ffn_norm, eps, s), h)
        g = each("gate_proj", lambda v, s: k.matvec(lw.gate_proj, v, s), n)
        u = each("up_proj", lambda v, s: k.matvec(lw.up_proj, v, s), n)
        sw = each("swiglu", k.swiglu, g, u)
        d = each("down_proj", lambda v, s: k.matvec(lw.down_proj, v, s), sw)
        out = each("ffn_residual", k.add, h, d)
        for op, rows in (
            ("ffn_norm", n), ("gate_proj", g), ("up_proj", u), ("swiglu", sw), ("down_proj", d),
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
        return self.forward_batch([(token_ids, cache, position_ids)], trace)[0]

    def forward_batch(
        self,
        requests: Sequence[tuple[Sequence[int], KVCache, PositionIds | None]],
        trace: TraceHook | None = None,
    ) -> list[np.ndarray]:
        """Several sequences in one layer-major pass; logits float32 [T_r, vocab] per request.

        The trace receives every token of the call, requests in the order given.
        """
        tokens, pos, caches = gather_requests(requests)

        def hook(name: str, rows: list[Vec]) -> None:
            if trace is not None:
                trace(name, as_rows(rows))

        x = self.embed(tokens)
        hook("embed", x)
        for i, lw in enumerate(self.weights.layers):
            x = self.attention_block(i, lw, x, pos, caches, hook)
            x = self.mlp_block(i, lw, x, hook)
        k, each = self.kernels, per_token(None, len(x))
        eps, final_norm = self.config.eps_f32, self.weights.final_norm
        n = each("final_norm", lambda v, s: k.rmsnorm(v, final_norm, eps, s), x)
        hook("final_norm", n)
        head = self.weights.output_matrix()
        logits = each("lm_head", lambda v, s: k.matvec(head, v, s), n)
        hook("logits", logits)
        return split_per_request(logits, requests)
