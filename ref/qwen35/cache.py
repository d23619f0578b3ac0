"""The per-sequence state of a Qwen3.5 text model (spec/models.md §qwen35).

Full-attention layers keep K (after k_norm and RoPE) and V per position; Gated DeltaNet layers
keep the last kernel−1 inputs of the causal convolution (zeros before the sequence: the conv's
left padding) and one float32 state [dk, dv] per value head (zeros at the start).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from weightfile.spec.ninfer3.text_config import FULL_ATTENTION

from .config import Qwen35Config

Vec = list[np.float32]


@dataclass
class Qwen35Cache:
    keys: list[list[list[Vec]]] = field(default_factory=list)  # [layer][pos][kv_head][head_dim]
    values: list[list[list[Vec]]] = field(default_factory=list)
    conv: list[list[Vec]] = field(default_factory=list)  # [layer][kernel-1][channels], oldest first
    recurrent: list[list[np.ndarray]] = field(default_factory=list)  # [layer][v_head] [dk, dv]
    length: int = 0  # tokens seen so far

    @classmethod
    def empty(cls, config: Qwen35Config) -> Qwen35Cache:
        cache = cls()
        for kind in config.layer_types:
            cache.keys.append([])
            cache.values.append([])
            if kind == FULL_ATTENTION:
                cache.conv.append([])
                cache.recurrent.append([])
                continue
            channels = 2 * config.gdn_key_dim + config.gdn_value_dim
            zero = [np.float32(0.0)] * channels
            cache.conv.append([list(zero) for _ in range(config.linear_conv_kernel_dim - 1)])
            dk, dv = config.linear_key_head_dim, config.linear_value_head_dim
            cache.recurrent.append(
                [np.zeros((dk, dv), np.float32) for _ in range(config.linear_num_value_heads)]
            )
        return cache


@dataclass
class RecordingCache(Qwen35Cache):
    """A cache whose verification forward records, instead of only overwriting, the Gated
    DeltaNet state after every token (spec/models.md §qwen35-mtp-round): `start()` opens the
    journal, `commit(keep)` keeps the first `keep` tokens of the recorded call (K/V rows past them
    dropped, each GDN layer's conv window and recurrent states set to those after token keep−1)."""

    journal: dict[int, list] | None = None
    start_length: int = 0

    def start(self) -> None:
        self.journal, self.start_length = {}, self.length

    def note_gdn(self, layer: int) -> None:
        """Called by the GDN block after each token's state update."""
        if self.journal is not None:
            states = [s.copy() for s in self.recurrent[layer]]
            self.journal.setdefault(layer, []).append((list(self.conv[layer]), states))

    def commit(self, keep: int) -> None:
        assert self.journal is not None and 0 < keep <= self.length - self.start_length
        end = self.start_length + keep
        for layer in range(len(self.keys)):
            del self.keys[layer][end:]
            del self.values[layer][end:]
        for layer, entries in self.journal.items():
            conv, states = entries[keep - 1]
            self.conv[layer], self.recurrent[layer] = list(conv), [s.copy() for s in states]
        self.length, self.journal = end, None
