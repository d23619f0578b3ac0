"""The in-memory weights of a Qwen3-MoE decoder (spec/models.md §qwen3-moe, spec/vqf.md
§text-tensors).

Attention and norms are those of `weightfile.ref.qwen3.weights.LayerWeights`; the FFN half is a
float32 router [E, hidden] and E SwiGLU experts, each its own gate/up [Ie, hidden] and down
[hidden, Ie] matrix (a VQF file's expert bands, cut out by the binder).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, Matrix

from .config import Qwen3MoeConfig


@dataclass(frozen=True)
class ExpertWeights:
    """One expert's SwiGLU (model.layers.L.mlp.experts.e.*)."""

    gate: Matrix  # [Ie, hidden]
    up: Matrix  # [Ie, hidden]
    down: Matrix  # [hidden, Ie]


@dataclass(frozen=True)
class MoeLayerWeights:
    """One decoder layer: Qwen3 attention, then the router and the experts."""

    attn_norm: np.ndarray  # float32 [hidden]
    q_proj: Matrix  # [heads*head_dim, hidden]
    k_proj: Matrix  # [kv_heads*head_dim, hidden]
    v_proj: Matrix  # [kv_heads*head_dim, hidden]
    q_norm: np.ndarray  # float32 [head_dim]
    k_norm: np.ndarray  # float32 [head_dim]
    o_proj: Matrix  # [hidden, heads*head_dim]
    ffn_norm: np.ndarray  # float32 [hidden]
    router: DenseMatrix  # float32 [E, hidden]   mlp.gate.weight
    experts: tuple[ExpertWeights, ...]  # E of them


@dataclass(frozen=True)
class MoeModelWeights:
    """The whole decoder; lm_head None means tied to the embedding."""

    embed: np.ndarray  # float32 [vocab, hidden]
    layers: tuple[MoeLayerWeights, ...]
    final_norm: np.ndarray  # float32 [hidden]
    lm_head: Matrix | None = None  # [vocab, hidden]

    def output_matrix(self) -> Matrix:
        """The lm_head, or the embedding itself when the weights are tied."""
        return self.lm_head if self.lm_head is not None else DenseMatrix(self.embed)


def check_shapes(c: Qwen3MoeConfig, w: MoeModelWeights) -> None:
    """Every tensor has the shape the config implies; ValueError names the first that does not."""
    d, ie = c.hidden_size, c.moe_intermediate_size
    want = {"embed": ((c.vocab_size, d), w.embed.shape), "final_norm": ((d,), w.final_norm.shape)}
    if len(w.layers) != c.num_hidden_layers:
        raise ValueError(f"{len(w.layers)} layers, config says {c.num_hidden_layers}")
    for i, lw in enumerate(w.layers):
        p = f"layers.{i}."
        if len(lw.experts) != c.num_experts:
            raise ValueError(f"{p}experts: {len(lw.experts)}, config says {c.num_experts}")
        want |= {
            p + "attn_norm": ((d,), lw.attn_norm.shape),
            p + "q_proj": ((c.q_dim, d), lw.q_proj.shape),
            p + "k_proj": ((c.kv_dim, d), lw.k_proj.shape),
            p + "v_proj": ((c.kv_dim, d), lw.v_proj.shape),
            p + "q_norm": ((c.head_dim,), lw.q_norm.shape),
            p + "k_norm": ((c.head_dim,), lw.k_norm.shape),
            p + "o_proj": ((d, c.q_dim), lw.o_proj.shape),
            p + "ffn_norm": ((d,), lw.ffn_norm.shape),
            p + "router": ((c.num_experts, d), lw.router.shape),
        }
        for e, ew in enumerate(lw.experts):
            q = f"{p}experts.{e}."
            want |= {
                q + "gate": ((ie, d), ew.gate.shape),
                q + "up": ((ie, d), ew.up.shape),
                q + "down": ((d, ie), ew.down.shape),
            }
    if w.lm_head is not None:
        want["lm_head"] = ((c.vocab_size, d), w.lm_head.shape)
    for name, (expected, got) in want.items():
        if tuple(got) != expected:
            raise ValueError(f"{name}: shape {tuple(got)}, expected {expected}")
