"""The MTP head and the speculation's target on the fast Qwen3.5 family, bit for bit
`ref.qwen35.mtp` (spec/models.md §qwen35-mtp, §qwen35-mtp-round; spec/numerics.md §mtp).

`FastVerifier` runs the fast text model's layers (fast/qwen35/model.py's blocks) and returns the
final-norm hidden states with the logits; its `FastRecordingCache` keeps, during verification,
each GDN layer's convolution inputs and the recurrent state after every token (the GDN block
calls `note_conv` / `note_state`), so `commit(keep)` restores those after token keep − 1 without
recomputing. `FastMtpHead` is the MTP step on a one-layer `FastQwen35Model` of the MTP block
(its attention and FFN blocks, its RMSNorm), the input projection and heads as `NfMatrix` views
of the mapped file. The round logic is the reference's (`ref.qwen35.speculative.Speculation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from weightfile.ref.layers.norm import zero_centred
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.require import require
from weightfile.ref.qwen35.mtp_bind import (
    MtpWeights,
    arrange,
    block_config,
    check_mtp,
    check_proposal,
)
from weightfile.ref.qwen35.speculative import greedy_index
from weightfile.ref.qwen35.weights import Qwen35Weights
from weightfile.spec.ninfer3.mtp_names import MTP_LAYER_PREFIX
from weightfile.spec.ninfer3.text_names import layer_prefix

from .attention import attention_block
from .bind import PayloadReader
from .ffn import ffn_block
from .model import FastQwen35Cache, FastQwen35Model
from .ops import rmsnorm


class FastRecordingCache(FastQwen35Cache):
    """FastQwen35Cache with the verification journal (ref.qwen35.cache.RecordingCache)."""

    def __init__(self, config, capacity: int = 16) -> None:
        super().__init__(config, capacity)
        self.journal: dict[int, list] | None = None
        self.windows: dict[int, tuple[np.ndarray, int]] = {}
        self.start_length = 0

    def start(self) -> None:
        self.journal, self.windows, self.start_length = {}, {}, self.length

    def note_conv(self, layer: int, seq: np.ndarray, kernel: int) -> None:
        if self.journal is not None:
            self.windows[layer] = (seq.copy(), kernel)

    def note_state(self, layer: int, state: np.ndarray) -> None:
        if self.journal is not None:
            self.journal.setdefault(layer, []).append(state.copy())

    def commit(self, keep: int) -> None:
        """Keep the first `keep` tokens of the recorded call: K/V rows past them are dead (the
        length says so), each GDN layer's window and states those after token keep − 1."""
        assert self.journal is not None and 0 < keep <= self.length - self.start_length
        for layer, states in self.journal.items():
            seq, kernel = self.windows[layer]
            self.conv[layer] = seq[keep : keep + kernel - 1].copy()
            self.recurrent[layer] = states[keep - 1]
        self.length, self.journal = self.start_length + keep, None


class FastVerifier:
    """The fast text model as the speculation's target (ref.qwen35.mtp.RefVerifier's twin)."""

    def __init__(self, model: FastQwen35Model) -> None:
        self.model, self.kernels = model, model.kernels

    def new_cache(self) -> FastRecordingCache:
        return FastRecordingCache(self.model.config)

    def run(self, tokens: Sequence[int], cache: FastRecordingCache, record: bool) -> tuple:
        if record:
            cache.start()
        return self.model.hidden_forward(list(tokens), cache)

    def commit(self, cache: FastRecordingCache, keep: int) -> None:
        cache.commit(keep)


class FastMtpHead:
    """ref.qwen35.mtp.MtpHead on the fast kernels."""

    def __init__(self, target: FastQwen35Model, weights: MtpWeights, proposal=None) -> None:
        self.target, self.weights = target, weights
        self.config = block_config(target.config)
        head = target.weights.output_head if proposal is None else proposal[0]
        inner = Qwen35Weights(
            target.weights.token_embedding, (weights.block,), weights.final_norm, head
        )
        self.block = FastQwen35Model(self.config, inner, threads=target.threads)
        self.embedding_norm = zero_centred(weights.embedding_norm)
        self.hidden_norm = zero_centred(weights.hidden_norm)
        self.token_ids = None if proposal is None else proposal[1]

    def new_cache(self) -> FastQwen35Cache:
        return FastQwen35Cache(self.config)

    def extend(self, tokens: Sequence[int], hiddens: np.ndarray, cache) -> tuple:
        """ref.qwen35.mtp.MtpHead.extend: the last entry's (d [1, H], draft logits [1, rows])."""
        b, th = self.block, self.block.threads
        ids = list(tokens)
        cache.reserve(cache.length + len(ids))
        slots = list(range(cache.length, cache.length + len(ids)))
        e = rmsnorm(self.target.embed(ids), self.embedding_norm, b.eps)
        g = rmsnorm(np.asarray(hiddens, dtype=np.float32), self.hidden_norm, b.eps)
        u = self.weights.input_projection.matmat(np.concatenate([e, g], axis=1), th)
        cos, sin = b.cos_sin([(p, p, p) for p in slots])
        x = attention_block(b, 0, b.mixers[0], u, cos, sin, slots, [cache] * len(ids), None)
        x = ffn_block(b, 0, self.weights.block.ffn, x, None)
        cache.length += len(ids)
        d = rmsnorm(x[-1:], b.final_norm, b.eps)  # only the last entry drafts
        return d, b.weights.output_head.matmat(d, th)

    def truncate(self, cache, length: int) -> None:
        cache.length = length

    def draft_token(self, row: np.ndarray) -> int:
        r = greedy_index(row)
        return r if self.token_ids is None else int(self.token_ids[r])


def open_mtp(nf: Artifact, target: FastQwen35Model, proposal: bool) -> FastMtpHead:
    """ref.qwen35.mtp.load_mtp with the projections read in place (keep `nf` open)."""
    binding = check_mtp(nf, target.config)
    pb = check_proposal(nf, target.config)
    reader = PayloadReader(nf)
    values: dict[str, Any] = {
        name: reader.matrix(binding.ranges[name], p.shape)  # type: ignore[arg-type]
        if p.direct_format is None
        else reader.direct(p, binding.ranges[name])
        for name, p in binding.params.items()
    }
    text0 = layer_prefix(0)
    as_text = {
        (text0 + n[len(MTP_LAYER_PREFIX) :] if n.startswith(MTP_LAYER_PREFIX) else n): v
        for n, v in values.items()
    }
    weights = arrange(binding.block_config, as_text, matrix=lambda m: m)
    head = None
    if proposal:
        require(
            pb is not None,
            "ninfer3.binder.component",
            f"{nf.path.name} has no proposal head (components.text.proposal)",
            "components.text",
        )
        assert pb is not None
        matrix = reader.matrix(pb.ranges, pb.head.shape)  # type: ignore[arg-type]
        rows = pb.head.shape[0]
        head = (matrix, np.arange(rows) if pb.token_ids is None else pb.token_ids)
    return FastMtpHead(target, weights, head)
