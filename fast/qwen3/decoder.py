"""The Qwen3 dense decoder on file-encoded weights (spec/models.md §qwen3; spec/numerics.md
§lanes8-tree, §quantized-matmul, §norms, §exp, §silu, §rope, §attention, spec/models.md
§qwen3-forward).

The same layer-major pass as `weightfile.ref.qwen3.decoder.Qwen3Model`, one NumPy array
[T, width] per operation instead of a list of per-token vectors: products, norms, RoPE,
attention and SwiGLU run in the C kernels in the contract's order (q/k norm and RoPE as one call);
the residual adds are element-wise NumPy float32 operations (one rounding each, as in the
reference); the RoPE tables are the same correctly rounded values (fast/numerics/rope.py). The trace
hook receives the same names and bits.

An untraced forward of one request runs every decoder layer in one C call (fast/csrc/layers.c:
the same kernels in the same sequence, so the same bits) with scratch buffers kept by the model;
a traced or batched forward takes the step-by-step path, which hands every activation to the hook.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from weightfile.fast._native import WfLayer, address
from weightfile.fast.layers.norm import norm_project
from weightfile.fast.layers.swiglu import swiglu_project
from weightfile.fast.numerics import matrix
from weightfile.fast.numerics.matrix import kernels, project, takes_codes
from weightfile.fast.numerics.rope import FastRopeTables
from weightfile.ref.layers.batch import PositionIds, gather_requests
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook, emit
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.trace import ATTENTION_OPS, MLP_OPS
from weightfile.ref.qwen3.weights import widen_f16
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .bind import FastLayer, FastWeights

#: FastLayer matrices in the order of layers.c's wf_layer.mat.
LAYER_MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: Multiply-adds one C call of the one-call path may do: a long prompt is cut into chunks of
#: tokens below it, so Ctrl-C (handled by Python between calls) is honoured within about a
#: second, and the scratch stays small. The bits do not change: a token's rows do not depend on
#: which tokens are computed with it (spec/numerics.md §batch-invariance). 2^35 is ~70 tokens of
#: Qwen3-0.6B, ~0.5 s on one core of the 2-core development VM (~60 GMAC/s); chunks of ~8 tokens
#: measured clearly slower there, chunks of ~64 as fast as one call.
CALL_BUDGET_MACS = 1 << 35


class FastKVCache:
    """Per layer and kv head: K (after k_norm and RoPE) and V rows [capacity, head_dim], grown by
    doubling; positions [0, length) are filled. A kv head's rows are kept together
    ([layers, kv_heads, capacity, head_dim]) so that a decode step's attention streams them
    (docs/performance.md, issue 33 item 5)."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int = 64) -> None:
        self.keys = np.zeros((layers, kv_heads, capacity, head_dim), dtype=np.float32)
        self.values = np.zeros((layers, kv_heads, capacity, head_dim), dtype=np.float32)
        self.length = 0

    def reserve(self, positions: int) -> None:
        """Room for `positions` rows per layer (rows past `length` are written before any read)."""
        old = self.capacity
        if positions <= old:
            return
        cap = old
        while cap < positions:
            cap *= 2
        layers, kv_heads, _, head_dim = self.keys.shape
        for name in ("keys", "values"):
            grown = np.empty((layers, kv_heads, cap, head_dim), dtype=np.float32)
            grown[:, :, :old] = getattr(self, name)
            setattr(self, name, grown)

    @property
    def capacity(self) -> int:
        return int(self.keys.shape[2])


class FastQwen3Model:
    """A Qwen3 dense decoder whose weights stay in their file encoding."""

    def __init__(
        self,
        config: Qwen3Config,
        weights: FastWeights,
        profile: NumericsProfile = CANONICAL,
        threads: int = 1,
    ) -> None:
        if profile.with_quantized_matmul(CANONICAL.quantized_matmul) != CANONICAL:
            raise NotImplementedError(
                f"the fast path implements the canonical rules, not {profile}"
            )
        self.config = config
        self.weights = weights
        self.threads = threads
        self.eps = config.eps_f32  # a property that builds a float32 on every read
        self.kernels = kernels_for(profile)  # the reference's kernels: sampling and RoPE tables
        self.rope = FastRopeTables(self.kernels.rope_tables(config.theta_f32, config.head_dim))
        # The one-call path is this class's dense layer; a subclass that overrides a block
        # (MoE, VL) or binds other layer types keeps the step-by-step path.
        dense = all(type(lw) is FastLayer for lw in weights.layers) and all(
            getattr(type(self), f) is getattr(FastQwen3Model, f)
            for f in ("attention_block", "mlp_block")
        )
        self._layers = self._layer_structs() if dense else ()
        self._scratch = np.empty(0, dtype=np.float32)

    def _layer_structs(self) -> ctypes.Array:
        """The wf_layer array of fast/csrc/layers.c (it points into `self.weights`, which this
        model keeps alive)."""
        out = (WfLayer * len(self.weights.layers))()
        for s, lw in zip(out, self.weights.layers, strict=True):
            mats = [getattr(lw, f) for f in LAYER_MATRICES]
            s.mat[:] = [m._address for m in mats]
            s.codes[:] = [int(takes_codes((m,))) for m in mats]
            for f in ("attn_norm", "q_norm", "k_norm", "ffn_norm"):
                setattr(s, f, address(getattr(lw, f)))
        return out

    def new_cache(self) -> FastKVCache:
        c = self.config
        return FastKVCache(c.num_hidden_layers, c.num_key_value_heads, c.head_dim)

    def embed(self, token_ids: Sequence[int]) -> np.ndarray:
        """Token embedding rows [T, hidden], F16 widened exactly."""
        vocab, d = self.config.vocab_size, self.config.hidden_size
        for t in token_ids:
            if not 0 <= t < vocab:
                raise ValueError(f"token id {t} outside the vocabulary of {vocab}")
        e = self.weights.embed
        if e.codec == "f16":
            words = e.data.view("<u2").reshape(vocab, d)
            return widen_f16(words[list(token_ids)])
        return e.data.view("<f4").reshape(vocab, d)[list(token_ids)].astype(np.float32)

    def cos_sin(self, pos: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """spec/numerics.md §rope cos / sin [T, 1, head_dim/2] for every token's MRoPE triple."""
        rows = [self.rope.cos_sin(p, self.config.mrope_section) for p in pos]
        return (np.stack([c for c, _ in rows])[:, None, :], np.stack([s for _, s in rows])[:, None])

    def norm_rope(self, x, weight, cos, sin) -> tuple[np.ndarray, np.ndarray]:
        """spec/numerics.md §rmsnorm per head, then spec/numerics.md §rotation rotate_half per head
        (x'_j = x_j c - x_{j+h} s, x'_{j+h} = x_{j+h} c + x_j s) in one C call: (normed, rotated)
        [T, heads*head_dim]."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        hd = self.config.head_dim
        normed, rotated = np.empty_like(x), np.empty_like(x)
        kernels().wf_norm_rope(
            address(x), x.shape[0], x.shape[1] // hd, hd, address(weight), self.eps,
            address(cos), address(sin), address(normed), address(rotated),
        )  # fmt: skip
        return normed, rotated

    def attention_block(self, i, lw: FastLayer, x, cos, sin, slots, caches, hook) -> np.ndarray:
        """h = x + o_proj(attn(input_layernorm(x))); slots[t] is token t's row in its cache."""
        c, eps, th = self.config, self.eps, self.threads
        n, (q, k, v) = norm_project(x, lw.attn_norm, eps, (lw.q_proj, lw.k_proj, lw.v_proj), th)
        qn, qr = self.norm_rope(q, lw.q_norm, cos, sin)
        kn, kr = self.norm_rope(k, lw.k_norm, cos, sin)
        kv_heads = c.num_key_value_heads
        for t, cache in enumerate(caches):
            cache.keys[i, :, slots[t]] = kr[t].reshape(kv_heads, c.head_dim)
            cache.values[i, :, slots[t]] = v[t].reshape(kv_heads, c.head_dim)
        att = np.empty_like(qr)
        scores = np.empty(max(slots) + 1, dtype=np.float32)
        lib = kernels()
        for t, cache in enumerate(caches):  # C-contiguous float32 planes
            lib.wf_attend_planes(
                address(qr[t]), address(cache.keys[i]), address(cache.values[i]), slots[t] + 1,
                cache.capacity, c.num_attention_heads, kv_heads, c.head_dim,
                address(scores), address(att[t]),
            )  # fmt: skip
        (o,) = project((lw.o_proj,), att, th)
        h = x + o
        if hook is None:  # untraced: no names to format
            return h
        rows = dict(
            attn_norm=n, q_proj=q, k_proj=k, v_proj=v, q_norm=qn, k_norm=kn, q_rope=qr, k_rope=kr,
            attn=att, o_proj=o, attn_residual=h,
        )  # fmt: skip
        emit(hook, i, ATTENTION_OPS, rows)
        return h

    def mlp_block(self, i: int, lw: FastLayer, h: np.ndarray, hook) -> np.ndarray:
        """out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h)."""
        th = self.threads
        n, (g, u) = norm_project(h, lw.ffn_norm, self.eps, (lw.gate_proj, lw.up_proj), th)
        sw, d = swiglu_project(g, u, lw.down_proj, th)
        out = h + d
        if hook is None:
            return out
        rows = dict(ffn_norm=n, gate_proj=g, up_proj=u, swiglu=sw, down_proj=d, ffn_residual=out)
        emit(hook, i, MLP_OPS, rows)
        return out

    def forward(
        self,
        token_ids: Sequence[int],
        cache: FastKVCache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
        logits: str = "all",
    ) -> np.ndarray:
        """Run T tokens after the cache's contents; returns logits float32 [T, vocab], or with
        logits="last" only the last token's [1, vocab] (see forward_batch)."""
        return self.forward_batch([(token_ids, cache, position_ids)], trace, logits)[0]

    def forward_batch(
        self,
        requests: Sequence[tuple[Sequence[int], FastKVCache, PositionIds | None]],
        trace: TraceHook | None = None,
        logits: str = "all",
    ) -> list[np.ndarray]:
        """Several sequences in one layer-major pass; logits float32 [T_r, vocab] per request.

        logits="last" computes the final norm and lm_head for each request's last token only and
        returns its [1, vocab]: a prompt whose other rows nobody reads skips most of the lm_head
        work. Those rows are the same bits either way: a token's logits do not depend on which
        other tokens are computed with it (spec/numerics.md §batch-invariance). A traced forward
        still computes (and traces) every row."""
        if logits not in ("all", "last"):
            raise ValueError(f'logits must be "all" or "last", not {logits!r}')
        tokens, pos, caches = gather_requests(requests)  # the reference's checks and defaults
        slots = [  # each token's row in its own cache
            at for ids, c, _ in requests for at in range(c.length, c.length + len(ids))
        ]

        def hook(name: str, rows: np.ndarray) -> None:
            if trace is not None:
                trace(name, np.array(rows, dtype=np.float32).reshape(len(tokens), -1))

        layer_hook = None if trace is None else hook
        x = self.embed(tokens)
        hook(EMBED, x)
        for token_ids, cache, _ in requests:
            cache.reserve(cache.length + len(token_ids))
        cos, sin = self.cos_sin(pos)
        if trace is None and len(requests) == 1 and self._layers:
            self._forward_layers(x, cos, sin, slots, caches[0])
        elif trace is None and len(requests) == 1:  # step by step, one chunk of tokens at a time
            for rows in self._step_chunks(len(tokens)):
                x[rows] = self._layer_steps(
                    x[rows], cos[rows], sin[rows], slots[rows], caches[rows]
                )
        else:  # traced or batched: every op's rows of every token at once, for the hook
            x = self._layer_steps(x, cos, sin, slots, caches, layer_hook)
        ends = np.cumsum([len(ids) for ids, _, _ in requests])
        last = logits == "last" and trace is None
        n, (rows,) = norm_project(
            x[ends - 1] if last else x,
            self.weights.final_norm, self.eps, (self.weights.lm_head,), self.threads,
        )  # fmt: skip
        hook(FINAL_NORM, n)
        hook(LOGITS, rows)
        out = []
        for r, ((token_ids, cache, _), end) in enumerate(zip(requests, ends, strict=True)):
            if last:
                out.append(rows[r : r + 1])
            elif logits == "last":  # traced: every row was computed for the hook
                out.append(rows[end - 1 : end])
            else:
                out.append(rows[end - len(token_ids) : end])
            cache.length += len(token_ids)
        return out

    def _layer_steps(self, x, cos, sin, slots, caches, hook=None) -> np.ndarray:
        """Every decoder layer on x [T, hidden], block by block (the traced, batched, MoE path)."""
        for i, lw in enumerate(self.weights.layers):
            x = self.attention_block(i, lw, x, cos, sin, slots, caches, hook)
            x = self.mlp_block(i, lw, x, hook)
        return x

    def _step_chunks(self, tokens: int) -> list[slice]:
        """Row ranges of an untraced step-by-step forward: each op's C call (a projection of every
        row of the chunk) stays within CALL_BUDGET_MACS, so Ctrl-C is honoured between calls."""
        widest = max(m.rows * m.cols for lw in self.weights.layers for m in (lw.q_proj, lw.o_proj))
        step = max(1, CALL_BUDGET_MACS // widest)
        return [slice(a, min(tokens, a + step)) for a in range(0, tokens, step)]

    def _forward_layers(
        self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, slots: list[int], cache: FastKVCache
    ) -> None:
        """Every decoder layer on x [T, hidden] in place, one C call per chunk of tokens whose
        work stays within CALL_BUDGET_MACS (each token's K/V is in the cache before a later
        chunk attends to it)."""
        c = self.config
        weights = sum(getattr(lw, f).rows * getattr(lw, f).cols
                      for lw in self.weights.layers for f in LAYER_MATRICES)  # fmt: skip
        attention = 2 * c.num_attention_heads * c.head_dim * len(self.weights.layers)
        start = 0
        while start < x.shape[0]:
            per_token = weights + attention * (slots[start] + 1)  # q·k and p·v over the cache
            end = min(x.shape[0], start + max(1, CALL_BUDGET_MACS // per_token))
            rows = slice(start, end)
            x[rows] = self._forward_chunk(x[rows], cos[rows], sin[rows], slots[rows], cache)
            start = end

    def _forward_chunk(
        self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, slots: list[int], cache: FastKVCache
    ) -> np.ndarray:
        """One C call (fast/csrc/layers.c): every decoder layer on the chunk's rows x [T, hidden];
        returns them, updated."""
        c, lib, tokens = self.config, kernels(), x.shape[0]
        x, cos, sin = (np.ascontiguousarray(a, dtype=np.float32) for a in (x, cos, sin))
        need = lib.wf_forward_scratch_floats(ctypes.addressof(self._layers), tokens)
        if self._scratch.size < need:
            self._scratch = np.empty(need, dtype=np.float32)
        slot_ids = np.array(slots, dtype=np.int64)
        status = lib.wf_forward_layers(
            ctypes.addressof(self._layers), len(self._layers), c.num_attention_heads,
            c.num_key_value_heads, c.head_dim, self.eps, address(x), tokens, address(cos),
            address(sin), address(cache.keys), address(cache.values), cache.capacity,
            address(slot_ids), address(self._scratch), self.threads,
            matrix.MIN_ELEMENTS_PER_THREAD,
        )  # fmt: skip
        assert status == 0, status
        return x
