"""Model hyper-parameters of a Qwen3 dense decoder (spec/models.md §qwen3, Qwen3-VL text
spec/models.md §qwen3-vl)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Qwen3Config:
    """The sizes and constants the forward pass needs; names follow transformers' config keys."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rope_theta: float  # used as float32, as the VQF header stores it
    rms_norm_eps: float  # used as float32
    tie_word_embeddings: bool = True
    #: Qwen3-VL interleaved MRoPE sections (T, H, W); None for plain Qwen3 RoPE.
    mrope_section: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.head_dim % 2:
            raise ValueError("head_dim must be even for rotate_half RoPE")

    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def group_size(self) -> int:
        """Query heads per kv head (GQA)."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def theta_f32(self) -> np.float32:
        return np.float32(self.rope_theta)

    @property
    def eps_f32(self) -> np.float32:
        return np.float32(self.rms_norm_eps)
