"""Bind a VQF file to the fast decoder without decoding its weights (spec/vqf.md §inventory,
§arch-semantics).

The same checks as `weightfile.ref.qwen3.bind_vqf`, in the same order and with the same errors
(its helpers are reused), but every projection stays a `FastMatrix` view of the mapped payload
and the embedding stays F16 / F32 words; only the small norm vectors are decoded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.fast.numerics.matrix import FastMatrix, matrix_from_entry
from weightfile.ref.qwen3.bind_vqf import (
    dense_plan,
    read_norm,
    require_entry,
    require_layout,
)
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.numerics.profile import QuantizedMatmul
from weightfile.spec.vqf.qtypes import QType

#: LayerWeights field -> (VQF stacked name suffix, shape key), in bind_vqf's binding order.
PROJECTIONS = {
    "q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o",
    "gate_proj": "gate", "up_proj": "up", "down_proj": "down",
}  # fmt: skip
MATRIX_QTYPES = (QType.Q8_0, QType.Q4_0, QType.F32, QType.F16)


@dataclass(frozen=True)
class FastLayer:
    attn_norm: np.ndarray
    q_proj: FastMatrix
    k_proj: FastMatrix
    v_proj: FastMatrix
    q_norm: np.ndarray
    k_norm: np.ndarray
    o_proj: FastMatrix
    ffn_norm: np.ndarray
    gate_proj: FastMatrix
    up_proj: FastMatrix
    down_proj: FastMatrix


@dataclass(frozen=True)
class FastWeights:
    """The decoder's weights: matrices in file encoding, norms decoded (float32)."""

    embed: FastMatrix  # [vocab, hidden], F16 or F32 words; also the lm_head when tied
    layers: tuple[FastLayer, ...]
    final_norm: np.ndarray
    lm_head: FastMatrix


def stacked(
    vqf: VQFFile, name: str, layers: int, out: int, inp: int, mode: QuantizedMatmul
) -> list[FastMatrix]:
    """Layer views of a stacked matrix entry, after bind_vqf's entry and layout checks."""
    e = require_entry(vqf, name)
    require_layout(e, MATRIX_QTYPES, layers * out * inp)
    return [matrix_from_entry(vqf, e, out, inp, layer=i, mode=mode) for i in range(layers)]


def bind(vqf: VQFFile, mode: QuantizedMatmul, projection_set: str | None = None):
    """(config, FastWeights) of a dense Qwen3 / Qwen3-VL-text VQF; errors as bind_vqf's."""
    p = dense_plan(vqf, projection_set)
    c: Qwen3Config = p.config
    pset, lm_name, shapes = p.projection_set, p.lm_name, p.shapes
    nl, d, hd = c.num_hidden_layers, c.hidden_size, c.head_dim
    m = {k: stacked(vqf, f"{pset}_{k}", nl, *oi, mode) for k, oi in shapes.items()}
    norms = {n: read_norm(vqf, n, nl, d) for n in ("attn_norm", "ffn_norm")}
    norms |= {n: read_norm(vqf, n, nl, hd) for n in ("q_norm", "k_norm")}
    layers = tuple(
        FastLayer(
            **{f: m[s][i] for f, s in PROJECTIONS.items()},
            **{n: np.ascontiguousarray(norms[n][i]) for n in norms},
        )
        for i in range(nl)
    )
    lm = None if lm_name is None else stacked(vqf, lm_name, 1, c.vocab_size, d, mode)[0]
    e = require_entry(vqf, "token_embed")
    require_layout(e, (QType.F16, QType.F32), c.vocab_size * d)
    embed = matrix_from_entry(vqf, e, c.vocab_size, d, mode=mode)
    final_norm = np.ascontiguousarray(read_norm(vqf, "final_norm", 1, d)[0])
    return c, FastWeights(embed, layers, final_norm, lm if lm is not None else embed)
