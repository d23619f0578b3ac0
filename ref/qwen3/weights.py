"""The in-memory weights a forward pass reads (spec/models.md §tiny-checkpoints tensor names,
spec/vqf.md §text-tensors).

Every projection is a `Matrix` of `weightfile.ref.numerics.matrix`: float32 values, or the
logical words (int8 codes + f16 scale bits per 32 columns) a VQF codec decodes to. Norm weights
and the embedding are float32 arrays (an F16 embedding is widened exactly by `widen_f16`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, Matrix

from .config import Qwen3Config


def widen_f16(bits: np.ndarray) -> np.ndarray:
    """F16 bit patterns (uint16) to float32; exact for every value, subnormals included."""
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


@dataclass(frozen=True)
class LayerWeights:
    """One decoder layer (model.layers.L.* in transformers names)."""

    attn_norm: np.ndarray  # float32 [hidden]          input_layernorm
    q_proj: Matrix  # [heads*head_dim, hidden]
    k_proj: Matrix  # [kv_heads*head_dim, hidden]
    v_proj: Matrix  # [kv_heads*head_dim, hidden]
    q_norm: np.ndarray  # float32 [head_dim]
    k_norm: np.ndarray  # float32 [head_dim]
    o_proj: Matrix  # [hidden, heads*head_dim]
    ffn_norm: np.ndarray  # float32 [hidden]           post_attention_layernorm
    gate_proj: Matrix  # [intermediate, hidden]
    up_proj: Matrix  # [intermediate, hidden]
    down_proj: Matrix  # [hidden, intermediate]


@dataclass(frozen=True)
class ModelWeights:
    """The whole decoder; lm_head None means tied to the embedding."""

    embed: np.ndarray  # float32 [vocab, hidden]
    layers: tuple[LayerWeights, ...]
    final_norm: np.ndarray  # float32 [hidden]
    lm_head: Matrix | None = None  # [vocab, hidden]

    def output_matrix(self) -> Matrix:
        """The lm_head, or the embedding itself when the weights are tied."""
        return self.lm_head if self.lm_head is not None else DenseMatrix(self.embed)


def check_shapes(config: Qwen3Config, w: ModelWeights) -> None:
    """Every tensor has the shape the config implies; ValueError names the first that does not."""
    c = config
    want = {
        "embed": ((c.vocab_size, c.hidden_size), w.embed.shape),
        "final_norm": ((c.hidden_size,), w.final_norm.shape),
    }
    if len(w.layers) != c.num_hidden_layers:
        raise ValueError(f"{len(w.layers)} layers, config says {c.num_hidden_layers}")
    for i, lw in enumerate(w.layers):
        p = f"layers.{i}."
        want[p + "attn_norm"] = ((c.hidden_size,), lw.attn_norm.shape)
        want[p + "q_proj"] = ((c.q_dim, c.hidden_size), lw.q_proj.shape)
        want[p + "k_proj"] = ((c.kv_dim, c.hidden_size), lw.k_proj.shape)
        want[p + "v_proj"] = ((c.kv_dim, c.hidden_size), lw.v_proj.shape)
        want[p + "q_norm"] = ((c.head_dim,), lw.q_norm.shape)
        want[p + "k_norm"] = ((c.head_dim,), lw.k_norm.shape)
        want[p + "o_proj"] = ((c.hidden_size, c.q_dim), lw.o_proj.shape)
        want[p + "ffn_norm"] = ((c.hidden_size,), lw.ffn_norm.shape)
        want[p + "gate_proj"] = ((c.intermediate_size, c.hidden_size), lw.gate_proj.shape)
        want[p + "up_proj"] = ((c.intermediate_size, c.hidden_size), lw.up_proj.shape)
        want[p + "down_proj"] = ((c.hidden_size, c.intermediate_size), lw.down_proj.shape)
    if w.lm_head is not None:
        want["lm_head"] = ((c.vocab_size, c.hidden_size), w.lm_head.shape)
    for name, (expected, got) in want.items():
        if tuple(got) != expected:
            raise ValueError(f"{name}: shape {tuple(got)}, expected {expected}")
