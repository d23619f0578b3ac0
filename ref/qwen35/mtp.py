"""The Qwen3.5 multi-token-prediction (MTP) head: one step, prefill alignment, recursive drafts
(spec/models.md §qwen35-mtp; spec/numerics.md §mtp).

With the zero-centred RMSNorm on(v, w) = (1 + w)·v / √(mean(v²) + eps) (the text model's norm,
its eps): for a target hidden state h (after the target's final norm) and the next token x,
e = on(embed(x), embedding_norm), g = on(h, hidden_norm), u = input_projection · [e ; g],
u through one full-attention Qwen3.5 block (the text model's FFN form, the MTP's own K/V cache),
d = on(block(u), final_norm), draft logits = head · d, where head is the text output head, or
the proposal head whose row r stands for token proposal_ids[r]. `d` is the next step's h.

`MtpHead.extend` runs entries at the cache's next positions; `draft_token` picks a draft from a
row of draft logits (the first largest, then the proposal row's token id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import FINAL_NORM, as_rows
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.require import require
from weightfile.ref.numerics.matrix import DenseMatrix

from .attention import attention_block
from .bind import ObjectDecoder
from .cache import Qwen35Cache, RecordingCache
from .ffn import ffn_block
from .model import Qwen35Model
from .mtp_bind import MtpWeights, block_config, check_mtp, check_proposal, mtp_weights
from .ops import Ops, zero_centred
from .speculative import greedy_index
from .weights import AttentionWeights, Linear


def _nothing(name: str, values: object) -> None:
    """The trace hook of the MTP block: it records nothing."""


class MtpHead:
    """The MTP head bound to its target (the text model) and, optionally, a proposal head."""

    def __init__(
        self,
        target: Qwen35Model,
        weights: MtpWeights,
        proposal: tuple[Linear, np.ndarray] | None = None,
    ) -> None:
        self.target, self.weights = target, weights
        self.config = block_config(target.config)
        self.kernels = target.kernels
        self.ops = Ops(self.kernels, self.config, target.ops.rope)
        mixer = weights.block.mixer
        assert isinstance(mixer, AttentionWeights)
        self.mixer = replace(
            mixer, query_norm=zero_centred(mixer.query_norm), key_norm=zero_centred(mixer.key_norm)
        )
        self.input_norm = zero_centred(weights.block.input_norm)
        self.post_norm = zero_centred(weights.block.post_attention_norm)
        self.embedding_norm = zero_centred(weights.embedding_norm)
        self.hidden_norm = zero_centred(weights.hidden_norm)
        self.final_norm = zero_centred(weights.final_norm)
        self.head = target.weights.output_head if proposal is None else proposal[0]
        self.token_ids = None if proposal is None else proposal[1]

    def new_cache(self) -> Qwen35Cache:
        return Qwen35Cache.empty(self.config)

    def stem(self, tokens: Sequence[int], hiddens: np.ndarray) -> list:
        """u = input_projection · [on(embed(x)) ; on(h)] per entry."""
        k = self.kernels
        e = each(lambda v: self.ops.norm(v, self.embedding_norm), self.target.embed(tokens))
        rows = [[np.float32(v) for v in h] for h in np.asarray(hiddens, dtype=np.float32)]
        g = each(lambda v: self.ops.norm(v, self.hidden_norm), rows)
        return [k.matvec(self.weights.input_projection, a + b) for a, b in zip(e, g, strict=True)]

    def extend(
        self, tokens: Sequence[int], hiddens: np.ndarray, cache: Qwen35Cache
    ) -> tuple[np.ndarray, np.ndarray]:
        """Entries (x, h) at the cache's next positions: the last entry's (d float32 [1, H],
        draft logits float32 [1, head rows]) — the only one a draft is read from."""
        if len(tokens) != len(hiddens) or not tokens:
            raise ValueError("one hidden state per token, at least one")
        pos = [(p, p, p) for p in range(cache.length, cache.length + len(tokens))]
        caches = [cache] * len(tokens)
        x = self.stem(tokens, hiddens)
        x = attention_block(self.ops, 0, self.mixer, self.input_norm, x, pos, caches, _nothing)
        x = ffn_block(self.ops, 0, self.weights.block.ffn, self.post_norm, x, _nothing)
        cache.length += len(tokens)
        d = self.ops.norm(x[-1], self.final_norm)  # only the last entry drafts
        return as_rows([d]), as_rows([self.kernels.matvec(self.head, d)])

    def truncate(self, cache: Qwen35Cache, length: int) -> None:
        """Forget the entries from position `length` on (the drafts' own entries)."""
        del cache.keys[0][length:]
        del cache.values[0][length:]
        cache.length = length

    def draft_token(self, row: np.ndarray) -> int:
        """The draft of one row of draft logits: the first largest row, as a token id."""
        r = greedy_index(row)
        return r if self.token_ids is None else int(self.token_ids[r])


class RefVerifier:
    """The reference text model as the speculation's target (ref/qwen35/speculative.py): its
    final-norm hidden states beside its logits, the GDN journal during verification."""

    def __init__(self, model: Qwen35Model) -> None:
        self.model, self.kernels = model, model.kernels

    def new_cache(self) -> RecordingCache:
        return RecordingCache.empty(self.model.config)

    def run(
        self, tokens: Sequence[int], cache: RecordingCache, record: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """(hidden after the final norm [T, H], logits [T, V]) of T tokens after the cache."""
        if record:
            cache.start()
        seen: dict[str, np.ndarray] = {}

        def keep(name: str, rows: np.ndarray) -> None:
            if name == FINAL_NORM:
                seen[name] = rows

        logits = self.model.forward(list(tokens), cache, None, keep)
        return seen[FINAL_NORM], logits

    def commit(self, cache: RecordingCache, keep: int) -> None:
        cache.commit(keep)


def load_mtp(
    nf: Artifact, target: Qwen35Model, proposal: bool, codec_for: Callable[[str, str], Any]
) -> MtpHead:
    """The file's MTP head on `target` (checked, decoded with `codec_for`), drafting with the
    proposal head when `proposal` (`ninfer3.binder.component` when the file lacks either)."""
    binding = check_mtp(nf, target.config)
    pb = check_proposal(nf, target.config)
    decoder = ObjectDecoder(nf, codec_for)
    head = None
    if proposal:
        require(
            pb is not None,
            "ninfer3.binder.component",
            f"{nf.path.name} has no proposal head (components.text.proposal)",
            "components.text",
        )
        assert pb is not None
        values = decoder.parameter(pb.ranges, pb.head.shape)
        ids = np.arange(values.shape[0]) if pb.token_ids is None else pb.token_ids
        head = (DenseMatrix(values), ids)
    return MtpHead(target, mtp_weights(binding, decoder), head)
