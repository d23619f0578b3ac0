"""The Qwen3 dense decoder forward pass (spec/models.md §qwen3; spec/numerics.md §attention).

Layer-major, like a prefill: each layer runs over all tokens of the call before the next layer.
Every arithmetic step goes through the profile's `Kernels`, so the same code runs under any
numerics profile. Vectors are lists of float32 scalars; `[T][...]` comments give shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from weightfile.ref.layers import attention
from weightfile.ref.layers.batch import PositionIds, gather_requests, split_per_request
from weightfile.ref.layers.heads import split_heads
from weightfile.ref.layers.norm import head_rmsnorm
from weightfile.ref.layers.swiglu import swiglu_rows
from weightfile.ref.layers.tokens import Vec, each
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook, as_rows, emit
from weightfile.ref.numerics.kernels import Kernels, kernels_for
from weightfile.ref.numerics.rope import apply_rope
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .config import Qwen3Config
from .trace import ATTENTION_OPS, MLP_OPS
from .weights import LayerWeights, ModelWeights, check_shapes


@dataclass
class KVCache:
    """Per layer, per position: the kv-head vectors of K (after k_norm and RoPE) and V."""

    keys: list[list[list[Vec]]] = field(default_factory=list)  # [layer][pos][kv_head][head_dim]
    values: list[list[list[Vec]]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.keys[0]) if self.keys else 0


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
        c = self.config
        return head_rmsnorm(self.kernels, vectors, weight, c.head_dim, c.eps_f32)

    def rope_heads(self, vectors: Vec, position_ids: Sequence[int]) -> Vec:
        """RoPE with rotate_half on every head of one token."""
        cos, sin = self.rope.cos_sin(position_ids, self.config.mrope_section)
        out: Vec = []
        for head in split_heads(vectors, self.config.head_dim):
            out += apply_rope(head, cos, sin)
        return out

    def attend(self, q: Vec, keys: list[list[Vec]], values: list[list[Vec]]) -> Vec:
        """Causal GQA attention of one token over cached positions 0..p. [heads*head_dim]"""
        c = self.config
        return attention.attend(self.kernels, q, keys, values, c.head_dim, c.group_size)

    # --- the layer and the model -----------------------------------------------------------

    def attention_block(
        self, i: int, lw: LayerWeights, x: list[Vec], pos: PositionIds, caches: list[KVCache], hook
    ) -> list[Vec]:
        """h = x + o_proj(attn(input_layernorm(x))) for every token of the call.

        caches[t] is the cache of token t's sequence; tokens of one sequence come in order.
        """
        k, eps, hd = self.kernels, self.config.eps_f32, self.config.head_dim
        n = each(lambda v: k.rmsnorm(v, lw.attn_norm, eps), x)
        q = each(lambda v: k.matvec(lw.q_proj, v), n)
        kk = each(lambda v: k.matvec(lw.k_proj, v), n)
        vv = each(lambda v: k.matvec(lw.v_proj, v), n)
        qn = each(lambda v: self.head_norm(v, lw.q_norm), q)
        kn = each(lambda v: self.head_norm(v, lw.k_norm), kk)
        qr = [self.rope_heads(v, p) for v, p in zip(qn, pos, strict=True)]
        kr = [self.rope_heads(v, p) for v, p in zip(kn, pos, strict=True)]
        att = attention.causal_attention(i, qr, kr, vv, caches, hd, self.attend)
        o = each(lambda v: k.matvec(lw.o_proj, v), att)
        h = each(k.add, x, o)
        rows = dict(
            attn_norm=n, q_proj=q, k_proj=kk, v_proj=vv, q_norm=qn, k_norm=kn, q_rope=qr,
            k_rope=kr, attn=att, o_proj=o, attn_residual=h,
        )  # fmt: skip
        emit(hook, i, ATTENTION_OPS, rows)
        return h

    def mlp_block(self, i: int, lw: LayerWeights, h: list[Vec], hook) -> list[Vec]:
        """out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h)."""
        k, eps = self.kernels, self.config.eps_f32
        n = each(lambda v: k.rmsnorm(v, lw.ffn_norm, eps), h)
        g, u, sw, d = swiglu_rows(k, lw.gate_proj, lw.up_proj, lw.down_proj, n)
        out = each(k.add, h, d)
        rows = dict(ffn_norm=n, gate_proj=g, up_proj=u, swiglu=sw, down_proj=d, ffn_residual=out)
        emit(hook, i, MLP_OPS, rows)
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
        hook(EMBED, x)
        for i, lw in enumerate(self.weights.layers):
            x = self.attention_block(i, lw, x, pos, caches, hook)
            x = self.mlp_block(i, lw, x, hook)
        k = self.kernels
        eps, final_norm = self.config.eps_f32, self.weights.final_norm
        n = each(lambda v: k.rmsnorm(v, final_norm, eps), x)
        hook(FINAL_NORM, n)
        head = self.weights.output_matrix()
        logits = each(lambda v: k.matvec(head, v), n)
        hook(LOGITS, logits)
        return split_per_request(logits, requests)
