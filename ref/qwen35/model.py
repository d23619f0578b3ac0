"""The Qwen3.5 text forward pass: hybrid gated attention / Gated DeltaNet (spec/models.md §qwen35).

Same public surface as `weightfile.ref.qwen3.decoder.Qwen3Model` (`config`, `kernels`,
`new_cache`, `forward`, `forward_batch`), so generation and sampling take either. Layer-major
like a prefill, every arithmetic step through the profile's kernels or the canonical operations of
spec/numerics.md §log, §gdn, spec/models.md §qwen35-forward, vectors as lists of float32 scalars.
Per layer: h = x + mixer(RMSNorm₀(x)); out = h + FFN(RMSNorm₀(h)), RMSNorm₀ the zero-centred norm (1
+ w).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from weightfile.ref.layers.batch import gather_requests, split_per_request
from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook, as_rows
from weightfile.ref.numerics.kernels import Kernels, kernels_for
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .attention import attention_block
from .cache import Qwen35Cache
from .config import Qwen35Config
from .ffn import ffn_block
from .gdn import gdn_block
from .ops import Ops, Vec, zero_centred
from .weights import AttentionWeights, Qwen35Weights

PositionIds = Sequence[Sequence[int]]  # [T][3]: MRoPE (t, h, w); text tokens have t = h = w


class Qwen35Model:
    """A Qwen3.5 text model bound to weights and a numerics profile."""

    def __init__(
        self, config: Qwen35Config, weights: Qwen35Weights, profile: NumericsProfile = CANONICAL
    ) -> None:
        if len(weights.layers) != config.num_hidden_layers:
            raise ValueError(
                f"{len(weights.layers)} layers, config says {config.num_hidden_layers}"
            )
        self.config = config
        self.weights = weights
        # The profile's kernels, public as on Qwen3Model: the sampler draws with them.
        self.kernels: Kernels = kernels_for(profile)
        has_attention = any(isinstance(lw.mixer, AttentionWeights) for lw in weights.layers)
        rope = (
            self.kernels.rope_tables(config.theta_f32, config.rotary_dim) if has_attention else None
        )
        self.ops = Ops(self.kernels, config, rope)
        # Zero-centred norms: the effective weight 1 + w, rounded once, at load
        # (spec/models.md §qwen35-rmsnorm).
        self.input_norms = [zero_centred(lw.input_norm) for lw in weights.layers]
        self.post_norms = [zero_centred(lw.post_attention_norm) for lw in weights.layers]
        self.final_norm = zero_centred(weights.final_norm)
        # The attention mixers with their q_norm / k_norm made effective (1 + w) the same way.
        self.mixers = [
            replace(m, query_norm=zero_centred(m.query_norm), key_norm=zero_centred(m.key_norm))
            if isinstance(m, AttentionWeights)
            else m
            for m in (lw.mixer for lw in weights.layers)
        ]

    def new_cache(self) -> Qwen35Cache:
        return Qwen35Cache.empty(self.config)

    def embed(self, token_ids: Sequence[int]) -> list[Vec]:
        """Token embedding: a row lookup, no arithmetic. [T][hidden]"""
        vocab = self.config.vocab_size
        for t in token_ids:
            if not 0 <= t < vocab:
                raise ValueError(f"token id {t} outside the vocabulary of {vocab}")
        return [list(self.weights.token_embedding[t]) for t in token_ids]

    def forward(
        self,
        token_ids: Sequence[int],
        cache: Qwen35Cache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
    ) -> np.ndarray:
        """Run T tokens after the cache's contents; returns logits float32 [T, vocab]."""
        return self.forward_batch([(token_ids, cache, position_ids)], trace)[0]

    def forward_rows(
        self,
        token_ids: Sequence[int],
        cache: Qwen35Cache,
        position_ids: PositionIds | None,
        trace: TraceHook | None,
        rows: Mapping[int, Vec],
    ) -> np.ndarray:
        """`forward` with the embeddings of some tokens replaced (index -> row, no arithmetic):
        the image rows of spec/models.md §qwen35-vision."""
        return self.run_batch([(token_ids, cache, position_ids)], trace, rows)[0]

    def forward_batch(
        self,
        requests: Sequence[tuple[Sequence[int], Qwen35Cache, PositionIds | None]],
        trace: TraceHook | None = None,
    ) -> list[np.ndarray]:
        """Several sequences in one layer-major pass; logits float32 [T_r, vocab] per request."""
        return self.run_batch(requests, trace, None)

    def run_batch(
        self,
        requests: Sequence[tuple[Sequence[int], Qwen35Cache, PositionIds | None]],
        trace: TraceHook | None,
        rows: Mapping[int, Vec] | None,
    ) -> list[np.ndarray]:
        """`forward_batch`, `rows` replacing embeddings (indexed over all requests' tokens)."""
        tokens, pos, caches = gather_requests(requests)

        def hook(name: str, values: list[Vec]) -> None:
            if trace is not None:
                trace(name, as_rows(values))

        x = self.embed(tokens)
        for at, row in (rows or {}).items():  # masked_scatter: no arithmetic
            x[at] = list(row)
        hook(EMBED, x)
        for i, lw in enumerate(self.weights.layers):
            mixer = self.mixers[i]
            if isinstance(mixer, AttentionWeights):
                x = attention_block(self.ops, i, mixer, self.input_norms[i], x, pos, caches, hook)
            else:
                x = gdn_block(self.ops, i, mixer, self.input_norms[i], x, caches, hook)
            x = ffn_block(self.ops, i, lw.ffn, self.post_norms[i], x, hook)
        for _, cache, _ in requests:
            cache.length += sum(1 for c in caches if c is cache)
        k = self.kernels
        n = each(lambda v: self.ops.norm(v, self.final_norm), x)
        hook(FINAL_NORM, n)
        logits = each(lambda v: k.matvec(self.weights.output_head, v), n)
        hook(LOGITS, logits)
        return split_per_request(logits, requests)


__all__ = ["Qwen35Cache", "Qwen35Model"]
