"""The Qwen3.5 text forward pass on payload-encoded weights, bit for bit `ref.qwen35.Qwen35Model`
(spec/models.md §qwen35, §qwen35-forward, §qwen35-trace; spec/numerics.md §lanes8-tree, §gdn).

The reference's layer-major pass with one float32 array [T, width] per operation instead of a list
of per-token vectors: products by fast/csrc/ninfer.c straight from the mapped payloads, the delta
rule by its C kernel, norms, SwiGLU, exp and attention by the fast Qwen3 kernels, element-wise
steps as NumPy float32 operations (one rounding each, as in the reference). The trace hook
receives the reference's names and bits; same public surface (`config`, `kernels`, `new_cache`,
`forward`, `forward_batch`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from weightfile.fast.numerics.rope import FastRopeTables
from weightfile.ref.layers.batch import PositionIds, gather_requests
from weightfile.ref.layers.norm import zero_centred
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen35.config import Qwen35Config
from weightfile.ref.qwen35.weights import AttentionWeights, Qwen35Weights
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .attention import attention_block
from .ffn import ffn_block
from .forward import eligible, forward_layers
from .gdn import gdn_block, journals
from .ops import exp, rmsnorm


def gdn_state_shapes(config: Qwen35Config) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """A Gated DeltaNet layer's conv window [kernel − 1, channels] and recurrent states
    [value heads, dk, dv] (spec/numerics.md §gdn)."""
    channels = 2 * config.gdn_key_dim + config.gdn_value_dim
    dk, dv = config.linear_key_head_dim, config.linear_value_head_dim
    window = (config.linear_conv_kernel_dim - 1, channels)
    return window, (config.linear_num_value_heads, dk, dv)


class FastQwen35Cache:
    """Per layer: K (after k_norm and RoPE) and V rows [capacity, kv_width] of a full-attention
    layer, grown by doubling; the last kernel − 1 conv inputs [kernel − 1, channels] and the
    recurrent states [value heads, dk, dv] of a Gated DeltaNet layer (zeros at the start)."""

    def __init__(self, config: Qwen35Config, capacity: int = 16) -> None:
        kv = config.num_key_value_heads * config.head_dim
        self.keys: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.conv: list[np.ndarray] = []
        self.recurrent: list[np.ndarray] = []
        attn = [kind == FULL_ATTENTION for kind in config.layer_types]
        for full in attn:
            self.keys.append(np.zeros((capacity if full else 0, kv), np.float32))
            self.values.append(np.zeros((capacity if full else 0, kv), np.float32))
            # a model of full-attention layers only has no GDN sizes in its config
            conv, state = ((0, 0), (0, 0, 0)) if full else gdn_state_shapes(config)
            self.conv.append(np.zeros(conv, np.float32))
            self.recurrent.append(np.zeros(state, np.float32))
        self.attention = attn
        self.length = 0

    def reserve(self, positions: int) -> None:
        """Room for `positions` K/V rows in every full-attention layer."""
        for i, full in enumerate(self.attention):
            old = self.keys[i].shape[0]
            if not full or positions <= old:
                continue
            cap = max(old, 1)
            while cap < positions:
                cap *= 2
            for rows in (self.keys, self.values):
                grown = np.zeros((cap, rows[i].shape[1]), np.float32)
                grown[:old] = rows[i]
                rows[i] = grown


class FastQwen35Model:
    """A Qwen3.5 text model whose projections stay in their `.ninfer` payload encoding."""

    def __init__(
        self,
        config: Qwen35Config,
        weights: Qwen35Weights,
        profile: NumericsProfile = CANONICAL,
        threads: int = 1,
    ) -> None:
        if profile.with_quantized_matmul(CANONICAL.quantized_matmul) != CANONICAL:
            raise NotImplementedError(
                f"the fast path implements the canonical rules, not {profile}"
            )
        if len(weights.layers) != config.num_hidden_layers:
            raise ValueError(
                f"{len(weights.layers)} layers, config says {config.num_hidden_layers}"
            )
        self.config, self.weights, self.threads = config, weights, threads
        self.eps = config.eps_f32
        self.kernels = kernels_for(profile)  # the reference's: routing, sampling, RoPE tables
        has_attention = FULL_ATTENTION in config.layer_types
        self.rope = (
            FastRopeTables(self.kernels.rope_tables(config.theta_f32, config.rotary_dim))
            if has_attention
            else None
        )
        # Zero-centred norms: the effective weight 1 + w, rounded once, at load, as the
        # reference does (spec/models.md §qwen35-rmsnorm).
        self.input_norms = [zero_centred(lw.input_norm) for lw in weights.layers]
        self.post_norms = [zero_centred(lw.post_attention_norm) for lw in weights.layers]
        self.final_norm = zero_centred(weights.final_norm)
        self._a_exp: dict[int, np.ndarray] = {}
        self._bindings: dict = {}  # per-layer C bindings (`bound`)
        self._one_call: bool | None = None
        self.mixers = [
            replace(m, query_norm=zero_centred(m.query_norm), key_norm=zero_centred(m.key_norm))
            if isinstance(m, AttentionWeights)
            else m
            for m in (lw.mixer for lw in weights.layers)
        ]

    def a_exp(self, i: int, w) -> np.ndarray:
        """exp(A_log) of Gated DeltaNet layer i (spec/numerics.md §exp, spec/models.md §qwen35),
        computed on first use and kept: it depends on the weights alone."""
        kept = self._a_exp.get(i)
        if kept is None:
            kept = self._a_exp[i] = exp(w.a_log)
        return kept

    def bound(self, key: tuple, make: Callable[[], Any]) -> Any:
        """A layer's C binding (fast/qwen35/gdn.py GdnBinding, attention.py AttentionBinding,
        matrix.py ProductSet) named by `key`, made on first use and kept: it depends on the
        weights alone."""
        kept = self._bindings.get(key)
        if kept is None:
            kept = self._bindings[key] = make()
        return kept

    def one_call(self) -> bool:
        """True when the decoder layers can run as one C call (fast/qwen35/forward.py)."""
        if self._one_call is None:
            self._one_call = eligible(self)
        return self._one_call

    def new_cache(self) -> FastQwen35Cache:
        return FastQwen35Cache(self.config)

    def embed(self, token_ids: Sequence[int]) -> np.ndarray:
        """Token embedding rows [T, hidden]: a row lookup, no arithmetic."""
        vocab = self.config.vocab_size
        for t in token_ids:
            if not 0 <= t < vocab:
                raise ValueError(f"token id {t} outside the vocabulary of {vocab}")
        table = self.weights.token_embedding
        if isinstance(table, np.ndarray):
            return np.ascontiguousarray(table[list(token_ids)], dtype=np.float32)
        return table.rows(list(token_ids))

    def cos_sin(self, pos: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """spec/numerics.md §rope cos / sin [T, rotary_dim/2] of every token's MRoPE triple."""
        if self.rope is None:
            return np.empty((len(pos), 0), np.float32), np.empty((len(pos), 0), np.float32)
        rows = [self.rope.cos_sin(p, self.config.mrope_section) for p in pos]
        return np.stack([c for c, _ in rows]), np.stack([s for _, s in rows])

    def forward(
        self,
        token_ids: Sequence[int],
        cache: FastQwen35Cache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
        logits: str = "all",
    ) -> np.ndarray:
        """Run T tokens after the cache's contents; returns logits float32 [T, vocab], or with
        logits="last" only the last token's [1, vocab] (see forward_batch)."""
        return self.forward_batch([(token_ids, cache, position_ids)], trace, logits)[0]

    # -- embedding rows given (vision, issue 28 item 4): `forward_rows` ---------------------------
    def forward_rows(
        self,
        token_ids: Sequence[int],
        cache: FastQwen35Cache,
        position_ids: PositionIds | None,
        trace: TraceHook | None,
        rows: Mapping[int, Sequence[float] | np.ndarray],
        logits: str = "all",
    ) -> np.ndarray:
        """`forward` with the embeddings of some tokens replaced (index -> row of hidden floats,
        no arithmetic: the image rows of spec/models.md §qwen35-vision), as the reference's
        `forward_rows`, bit for bit."""
        return self.run_batch([(token_ids, cache, position_ids)], trace, logits, rows)[0]

    # -- end of the embedding-rows entry ----------------------------------------------------------

    def forward_batch(
        self,
        requests: Sequence[tuple[Sequence[int], FastQwen35Cache, PositionIds | None]],
        trace: TraceHook | None = None,
        logits: str = "all",
    ) -> list[np.ndarray]:
        """Several sequences in one layer-major pass; logits float32 [T_r, vocab] per request.

        logits="last" applies the final norm and the output head to each request's last token
        only and returns its [1, vocab]: the same bits as that row of "all", since a token's row
        does not depend on the other rows computed with it (spec/numerics.md §batch-invariance).
        A traced forward computes (and traces) every row."""
        return self.run_batch(requests, trace, logits, None)

    def run_batch(
        self,
        requests: Sequence[tuple[Sequence[int], FastQwen35Cache, PositionIds | None]],
        trace: TraceHook | None,
        logits: str,
        rows: Mapping[int, Sequence[float] | np.ndarray] | None,
    ) -> list[np.ndarray]:
        """`forward_batch`, `rows` replacing embeddings (indexed over all requests' tokens)."""
        if logits not in ("all", "last"):
            raise ValueError(f'logits must be "all" or "last", not {logits!r}')
        x, hook = self.layers(requests, trace, rows)
        last = logits == "last"
        return self.head(x, requests, hook, last, only_last=last and trace is None)

    def hidden_forward(
        self, token_ids: Sequence[int], cache: FastQwen35Cache
    ) -> tuple[np.ndarray, np.ndarray]:
        """One request's (hidden after the final norm [T, H], logits [T, vocab]): what MTP reads
        of its target (spec/models.md §qwen35-mtp); the cache advanced by the T tokens."""
        requests = [(token_ids, cache, None)]
        x, _ = self.layers(requests, None, None)
        n = rmsnorm(x, self.final_norm, self.eps)
        cache.length += len(token_ids)
        return n, self.weights.output_head.matmat(n, self.threads)

    def layers(
        self,
        requests: Sequence[tuple[Sequence[int], FastQwen35Cache, PositionIds | None]],
        trace: TraceHook | None,
        rows: Mapping[int, Sequence[float] | np.ndarray] | None,
    ) -> tuple[np.ndarray, Callable[[str, np.ndarray], None]]:
        """The embedding (with `rows` replaced) and every decoder layer over all requests' tokens,
        layer-major; the caches reserved and written but not advanced. Returns the last layer's
        output [T, H] and the trace hook."""
        tokens, pos, caches = gather_requests(requests)
        slots = [at for ids, c, _ in requests for at in range(c.length, c.length + len(ids))]
        for ids, cache, _ in requests:
            cache.reserve(cache.length + len(ids))

        def hook(name: str, rows: np.ndarray) -> None:
            if trace is not None:
                trace(name, np.array(rows, dtype=np.float32).reshape(len(tokens), -1))

        layer_hook = None if trace is None else hook
        x = self.embed(tokens)
        for at, row in (rows or {}).items():  # masked_scatter: no arithmetic
            x[at] = np.asarray(row, dtype=np.float32)
        hook(EMBED, x)
        cos, sin = self.cos_sin(pos)
        if trace is None and len(requests) == 1 and self.one_call() and not journals(caches):
            return forward_layers(self, x, cos, sin, slots, caches[0]), hook
        for i, lw in enumerate(self.weights.layers):
            mixer = self.mixers[i]
            if isinstance(mixer, AttentionWeights):
                x = attention_block(self, i, mixer, x, cos, sin, slots, caches, layer_hook)
            else:
                x = gdn_block(self, i, mixer, x, caches, layer_hook)
            x = ffn_block(self, i, lw.ffn, x, layer_hook)
        return x, hook

    def head(self, x: np.ndarray, requests, hook, last: bool, only_last: bool) -> list[np.ndarray]:
        """The final norm and the output head (of each request's last row alone when
        `only_last`); the logits split per request (their last rows when `last`); every cache
        advanced by its request's tokens."""
        ends = np.cumsum([len(ids) for ids, _, _ in requests])
        n = rmsnorm(x[ends - 1] if only_last else x, self.final_norm, self.eps)
        hook(FINAL_NORM, n)
        rows = self.weights.output_head.matmat(n, self.threads)
        hook(LOGITS, rows)
        out = []
        for r, ((ids, cache, _), end) in enumerate(zip(requests, ends, strict=True)):
            if only_last:
                out.append(rows[r : r + 1])
            else:
                out.append(rows[end - 1 : end] if last else rows[end - len(ids) : end])
            cache.length += len(ids)
        return out
