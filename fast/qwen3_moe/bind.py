"""Bind a version-3 VQF file to the fast MoE decoder without decoding its matrices
(spec/vqf.md §text-tensors, §arch-semantics).

The reference binder's checks in its order (`moe_plan`, the entry and layout checks), then every
attention projection is a `FastMatrix` view of its layer, the router a float32 `FastMatrix`
view, and each layer's stacked gate/up/down stays one byte view: an expert's gate and up are
its row band, its down its column band read in place with a row-group stride (fast/csrc/moe.c,
the grid of `weightfile.ref.qwen3_moe.bands`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from weightfile.fast.numerics.matrix import FastMatrix, matrix_from_entry
from weightfile.fast.qwen3.bind import MATRIX_QTYPES, stacked
from weightfile.ref.qwen3.bind_vqf import read_norm, require_entry, require_layout
from weightfile.ref.qwen3_moe.bands import grid
from weightfile.ref.qwen3_moe.bind_vqf import ROUTER, moe_plan, read_router
from weightfile.ref.qwen3_moe.config import Qwen3MoeConfig
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.numerics.profile import QuantizedMatmul
from weightfile.spec.vqf.qtypes import QType, tensor_bytes


@dataclass(frozen=True)
class ExpertStack:
    """One layer's stacked [E·Ie, d] gate/up and [d, E·Ie] down, as payload views."""

    codec: str  # the registry layout of the stacked matrices (a band has the same one)
    gate: np.ndarray  # uint8 view
    up: np.ndarray
    down: np.ndarray
    hidden: int
    width: int  # Ie
    experts: int
    mode: QuantizedMatmul

    @cached_property
    def whole(self) -> tuple[FastMatrix, FastMatrix, FastMatrix]:
        """The stacked gate, up [E·Ie, d] and down [d, E·Ie] as matrices (fast/csrc/moe.c takes
        each expert's bands of them in place)."""
        rows, d = self.experts * self.width, self.hidden
        grid(self.codec, self.width, d)  # an expert's bands are whole row groups and blocks
        grid(self.codec, d, self.width)
        return (
            FastMatrix(self.codec, self.gate, rows, d, self.mode),
            FastMatrix(self.codec, self.up, rows, d, self.mode),
            FastMatrix(self.codec, self.down, d, rows, self.mode),
        )


@dataclass(frozen=True)
class FastMoeLayer:
    attn_norm: np.ndarray
    q_proj: FastMatrix
    k_proj: FastMatrix
    v_proj: FastMatrix
    q_norm: np.ndarray
    k_norm: np.ndarray
    o_proj: FastMatrix
    ffn_norm: np.ndarray
    router: FastMatrix  # f32 [E, d]
    experts: ExpertStack


@dataclass(frozen=True)
class FastMoeWeights:
    embed: FastMatrix
    layers: tuple[FastMoeLayer, ...]
    final_norm: np.ndarray
    lm_head: FastMatrix


def layer_views(vqf: VQFFile, name: str, layers: int, out: int, inp: int) -> tuple[str, list]:
    """(codec, uint8 views of each layer) of a stacked matrix, after the reference's checks."""
    e = require_entry(vqf, name)
    require_layout(e, MATRIX_QTYPES, layers * out * inp)
    if e.qtype in (QType.F32, QType.F16):
        codec = "f32" if e.qtype == QType.F32 else "f16"
    else:
        codec = codec_for(e.qtype, vqf.header.flags, e.name, shape=(out, inp))
    step = tensor_bytes(e.qtype, out * inp)
    payload = vqf.payload(e)
    return codec, [
        np.frombuffer(payload[i * step : (i + 1) * step], dtype=np.uint8) for i in range(layers)
    ]


def bind(vqf: VQFFile, mode: QuantizedMatmul, projection_set: str | None = None):
    """(config, FastMoeWeights) of a version-3 VQF; errors as ref.qwen3_moe.bind_vqf's."""
    p = moe_plan(vqf, projection_set)
    c: Qwen3MoeConfig = p.config
    nl, d, hd, ff = c.num_hidden_layers, c.hidden_size, c.head_dim, c.intermediate_size
    attn = {"q": (c.q_dim, d), "k": (c.kv_dim, d), "v": (c.kv_dim, d), "o": (d, c.q_dim)}
    m = {k: stacked(vqf, f"{p.projection_set}_{k}", nl, *oi, mode) for k, oi in attn.items()}
    ffn = {k: layer_views(vqf, f"{p.projection_set}_{k}", nl, *oi)
           for k, oi in {"gate": (ff, d), "up": (ff, d), "down": (d, ff)}.items()}  # fmt: skip
    read_router(vqf, nl, c.num_experts, d)  # the reference's checks (and its errors)
    routers = [
        matrix_from_entry(vqf, ROUTER, c.num_experts, d, layer=i, mode=mode) for i in range(nl)
    ]
    norms = {n: read_norm(vqf, n, nl, d) for n in ("attn_norm", "ffn_norm")}
    norms |= {n: read_norm(vqf, n, nl, hd) for n in ("q_norm", "k_norm")}
    layers = tuple(
        FastMoeLayer(
            q_proj=m["q"][i],
            k_proj=m["k"][i],
            v_proj=m["v"][i],
            o_proj=m["o"][i],
            **{n: np.ascontiguousarray(norms[n][i]) for n in norms},
            router=routers[i],
            experts=ExpertStack(
                ffn["gate"][0],
                ffn["gate"][1][i],
                ffn["up"][1][i],
                ffn["down"][1][i],
                d,
                c.moe_intermediate_size,
                c.num_experts,
                mode,
            ),
        )
        for i in range(nl)
    )
    lm = None if p.lm_name is None else stacked(vqf, p.lm_name, 1, c.vocab_size, d, mode)[0]
    e = require_entry(vqf, "token_embed")
    require_layout(e, (QType.F16, QType.F32), c.vocab_size * d)
    embed = matrix_from_entry(vqf, e, c.vocab_size, d, mode=mode)
    final_norm = np.ascontiguousarray(read_norm(vqf, "final_norm", 1, d)[0])
    return c, FastMoeWeights(embed, layers, final_norm, lm if lm is not None else embed)
