"""Speculative decoding with the MTP head: rounds of K drafts verified by one target forward
(spec/models.md §qwen35-mtp-round; spec/numerics.md §mtp-sampling).

`Speculation(target, drafter, …).tokens(prompt)` yields the generated tokens. The target is a
`Verifier` (the text model that returns its final-norm hidden states with its logits and records
its Gated DeltaNet state during verification); the drafter an `MtpHead` (ref/qwen35/mtp.py or
its fast twin). A round, with anchor a (the last emitted token, not yet seen by the target):

1. drafts d_1 … d_K: d_1 from the MTP entry already computed for a's position, then K − 1
   recursive MTP steps (each feeding the previous step's d as h and its draft as x);
2. one target forward of [a, d_1 … d_K] with the GDN journal open: column i's logits judge
   d_{i+1};
3. greedy: accept the longest prefix with d_{i+1} == argmax(column i) (the first largest), then
   emit argmax(column j) at the first rejected column j (the correction), or of column K when all
   were accepted (the bonus). Sampling: see `accept_sampled`;
4. commit the target's accepted prefix (a and the accepted drafts), drop the MTP's draft entries,
   and refresh the MTP with the target's hidden states of that prefix and the tokens that
   follow each of them (the accepted drafts and the correction/bonus), whose last entry gives the
   next round's d_1.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from weightfile.ref.layers.sampling import SplitMix64, sample
from weightfile.ref.numerics.f32 import F32

#: The purposes of the keyed random streams (spec/numerics.md §mtp-sampling).
ACCEPT, CORRECTION, NEXT = 1, 2, 3


def greedy_index(row: np.ndarray) -> int:
    """`ref.layers.sampling.greedy` on a float32 row: the first index of the largest value (a NaN
    is never larger; a NaN at index 0 is never beaten, so 0 wins)."""
    r = np.asarray(row, dtype=np.float32).reshape(-1)
    if r.size == 0 or np.isnan(r[0]):
        return 0
    return int(np.nanargmax(r))


def keyed_uniform(seed: int, purpose: int, position: int) -> np.float32:
    """spec/numerics.md §mtp-sampling u in [0, 1) for one (purpose, logical position): the first
    uniform_f32 of SplitMix64(k ⊕ purpose·2^56 ⊕ position), k the first output of
    SplitMix64(seed)."""
    k = SplitMix64(seed).next_u64()
    return SplitMix64(k ^ (purpose << 56) ^ (position & ((1 << 56) - 1))).uniform_f32()


def residual_sample(probs: Sequence[np.float32], draft: int, u: np.float32, kernels) -> int:
    """Draw from max(p − q, 0) renormalised, q one-hot at `draft`: r = p with r[draft] = 0,
    S = Σ r (canonical sum), then the first j whose running float32 sum of r_j / S exceeds u
    (the last positive j when rounding leaves none)."""
    r = [F32(0) if j == draft else p for j, p in enumerate(probs)]
    total = kernels.sum(r)
    if not total > 0:
        return draft
    running, last = F32(0), draft
    for j, p in enumerate(r):
        running = F32(running + F32(p / total))
        if p > 0:
            last = j
        if u < running:
            return j
    return last


class Verifier(Protocol):
    kernels: Any

    def new_cache(self) -> Any: ...
    def run(self, tokens: Sequence[int], cache: Any, record: bool) -> tuple[np.ndarray, Any]: ...
    def commit(self, cache: Any, keep: int) -> None: ...


@dataclass
class Round:
    """One round's record: the drafts, their draft logits [K, head rows], accepted count."""

    draft_tokens: list[int]
    draft_logits: np.ndarray
    accepted: int


@dataclass
class Speculation:
    """Greedy (temperature 0) or sampled speculative generation; `rounds` records each round."""

    target: Verifier
    drafter: Any
    draft_tokens: int
    temperature: float = 0.0
    seed: int = 0
    rounds: list[Round] = field(default_factory=list)

    def choose(self, logits: np.ndarray, position: int) -> int:
        """A token from a full column: greedy, or the spec/numerics.md §next-token sampler with the
        NEXT stream."""
        if self.temperature <= 0:
            return greedy_index(logits)
        u = keyed_uniform(self.seed, NEXT, position)
        return sample_with(list(logits), self.temperature, u, self.target.kernels)

    def drafts(self, d: np.ndarray, logits: np.ndarray, mcache: Any, k: int):
        """K drafts from the last MTP entry (its d, its draft logits), K − 1 more steps; the MTP
        cache keeps the draft entries until the caller truncates it."""
        tokens, rows = [], []
        h, row = d[-1:], logits[-1]
        for j in range(k):
            tokens.append(self.drafter.draft_token(row))
            rows.append(np.asarray(row, dtype=np.float32))
            if j + 1 < k:
                dd, ll = self.drafter.extend([tokens[-1]], h, mcache)
                h, row = dd[-1:], ll[-1]
        width = np.asarray(logits).shape[-1]
        return tokens, np.array(rows, dtype=np.float32).reshape(len(rows), width)

    def judge(self, logits: np.ndarray, drafts: list[int], start: int) -> tuple[int, int]:
        """(accepted count, correction or bonus token) for verification logits [K+1, V]; the
        draft d_{i+1} sits at logical position start + i + 1."""
        if self.temperature <= 0:
            a = 0
            while a < len(drafts) and greedy_index(logits[a]) == drafts[a]:
                a += 1
            return a, greedy_index(logits[a])
        return accept_sampled(self, logits, drafts, start)

    def tokens(
        self, prompt: Sequence[int], max_new_tokens: int, stop_ids: Collection[int] = ()
    ) -> Iterator[int]:
        """Each generated token; a stop id ends the stream and is not yielded."""
        if not prompt:
            raise ValueError("the prompt needs at least one token")
        cache, mcache = self.target.new_cache(), self.drafter.new_cache()
        h, logits = self.target.run(list(prompt), cache, record=False)
        anchor = self.choose(logits[-1], len(prompt))
        d, dl = self.drafter.extend([*prompt[1:], anchor], h, mcache)
        produced = 0
        while True:
            if anchor in stop_ids:
                return
            yield anchor
            produced += 1
            if produced >= max_new_tokens:
                return
            emitted, d, dl = self.round(anchor, d, dl, cache, mcache, max_new_tokens - produced)
            for t in emitted[:-1]:
                if t in stop_ids:
                    return
                yield t
                produced += 1
            anchor = emitted[-1]

    def round(self, anchor, d, dl, cache, mcache, remaining: int):
        """One round (module docstring): returns (accepted drafts + the correction/bonus, the
        refreshed MTP's last d and draft logits)."""
        k = min(self.draft_tokens, remaining - 1)
        base = mcache.length
        drafts, rows = self.drafts(d, dl, mcache, k) if k else ([], dl[-1:][:0])
        self.drafter.truncate(mcache, base)
        start = cache.length
        hidden, logits = self.target.run([anchor, *drafts], cache, record=True)
        a, nxt = self.judge(np.asarray(logits), drafts, start)
        self.target.commit(cache, a + 1)
        self.rounds.append(Round(drafts, rows, a))
        emitted = [*drafts[:a], nxt]
        d, dl = self.drafter.extend(emitted, np.asarray(hidden)[: a + 1], mcache)
        return emitted, d, dl


def sample_with(logits: list, temperature: float, u: np.float32, kernels) -> int:
    """The spec/numerics.md §next-token sampler with a given u (ref.layers.sampling.sample
    draws u first)."""

    class Fixed:
        def uniform_f32(self) -> np.float32:
            return u

    return sample(logits, temperature, Fixed(), kernels)  # type: ignore[arg-type]


def accept_sampled(s: Speculation, logits: np.ndarray, drafts: list[int], start: int):
    """Drafts are greedy (q one-hot): d at column i is accepted when u_accept < p_i(d), p_i the
    softmax of column i at the temperature; the first rejection draws from max(p − q, 0)
    renormalised with u_correction; all accepted: the bonus from column K with u_next."""
    t = F32(s.temperature)
    kernels = s.target.kernels
    for i, dtok in enumerate(drafts):
        probs = kernels.softmax([F32(v) / t for v in logits[i]])
        position = start + i + 1
        if not keyed_uniform(s.seed, ACCEPT, position) < probs[dtok]:
            u = keyed_uniform(s.seed, CORRECTION, position)
            return i, residual_sample(probs, dtok, u, kernels)
    k = len(drafts)
    return k, s.choose(logits[k], start + k + 1)
