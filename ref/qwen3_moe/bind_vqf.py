"""Bind a version-3 VQF file to the Qwen3-MoE decoder (spec/vqf.md §text-tensors, §arch-semantics;
spec/models.md §qwen3-moe-vqf-v3).

Attention, norms, the embedding and the lm_head bind exactly as for dense Qwen3
(`weightfile.ref.qwen3.bind_vqf`'s helpers). The FFN tensors are the MoE stacking of
spec/vqf.md §text-tensors: per layer a float32 router [E, d] (rows l·E … (l+1)·E − 1 of
`moe_router`), gate and up [E·Ie, d] whose rows [e·Ie, (e+1)·Ie) are expert e, and down [d, E·Ie]
whose columns [e·Ie, (e+1)·Ie) are expert e. Each layer's stacked matrix is decoded to its logical
words by the codec hook and cut into E experts (spec/numerics.md §quantized-matmul: the words of a
band are the band of the words, because no 32-column block or tile row group straddles two experts).

Rule ids raised here: vqf.bind.moe_experts, vqf.bind.moe_band, vqf.bind.moe_router (this
family's own), and the `vqf.bind.*` rows the dense binder's helpers raise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, Matrix, QuantMatrix
from weightfile.ref.qwen3.bind_vqf import (
    MatrixWords,
    choose_projection_set,
    codec_matrix_words,
    config_from_arch,
    read_embedding,
    read_matrices,
    read_norm,
    require_entry,
)
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.numerics.constants import QBLOCK
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

from .config import Qwen3MoeConfig
from .weights import ExpertWeights, MoeLayerWeights, MoeModelWeights

ROUTER = "moe_router"


def require_moe_arch(vqf: VQFFile) -> dict:
    """The arch of a version-3 file with counts the decoder can use: E > 0, 0 < k <= E, no
    shared experts (spec/vqf.md §arch-semantics; vqf.bind.moe_experts, vqf.bind.unsupported)."""
    h, a = vqf.header, vqf.header.arch
    if not h.is_moe:
        raise UnsupportedError(
            "vqf.bind.unsupported", "not a MoE file (version 2, no MOE flag)", path="flags"
        )
    ne, k = a["n_experts"], a["top_k"]
    if ne <= 0 or not 0 < k <= ne:
        raise InvalidError(
            "vqf.bind.moe_experts",
            f"n_experts {ne}, top_k {k}: need 0 < k <= E",
            path="header.arch.top_k",
        )
    if a["shared_experts"]:
        raise UnsupportedError(
            "vqf.bind.unsupported",
            f"shared_experts {a['shared_experts']}: Qwen3-MoE has none and the file names no "
            "tensor for them",
            path="header.arch.shared_experts",
        )
    if not a.get("has_q_norm"):
        raise UnsupportedError("vqf.bind.unsupported", "Qwen3 needs q/k norms", path="arch")
    return a


def require_bands(a: dict) -> None:
    """ffn_dim = E·Ie and Ie whole 32-column blocks, so down's column bands are whole blocks
    and (4 and 8 divide 32) no tile row group of gate/up mixes two experts (spec/vqf.md
    §text-tensors; vqf.bind.moe_band)."""
    ne, ie, ff = a["n_experts"], a["moe_ffn"], a["ffn_dim"]
    if ie <= 0 or ff != ne * ie:
        raise InvalidError(
            "vqf.bind.moe_band",
            f"ffn_dim {ff} != n_experts·moe_ffn {ne}·{ie}",
            path="header.arch.ffn_dim",
        )
    if ie % QBLOCK:
        raise InvalidError(
            "vqf.bind.moe_band",
            f"moe_ffn {ie} is not whole {QBLOCK}-column "
            "blocks: down's expert bands would share blocks",
            path="header.arch.moe_ffn",
        )


def read_router(vqf: VQFFile, layers: int, ne: int, d: int) -> list[DenseMatrix]:
    """moe_router, F32 [nl·E, d]: layer l is rows [l·E, (l+1)·E) (spec/vqf.md §text-tensors,
    §arch-semantics; vqf.bind.moe_router)."""
    e = require_entry(vqf, ROUTER)
    if e.qtype != QType.F32 or e.bytes != 4 * layers * ne * d or e.rows * e.cols != layers * ne * d:
        raise InvalidError(
            "vqf.bind.moe_router",
            f"{ROUTER}: qtype {e.qtype}, {e.rows}x{e.cols} in {e.bytes} bytes; want F32 "
            f"{layers * ne}x{d}",
            offset=e.entry_offset,
            path=f"directory[{e.index}]",
        )
    flat = np.frombuffer(bytes(vqf.payload(e)), dtype="<f4").astype(np.float32)
    per = flat.reshape(layers, ne, d)
    return [DenseMatrix(np.ascontiguousarray(per[i])) for i in range(layers)]


def rows_band(m: Matrix, lo: int, hi: int) -> Matrix:
    """Rows [lo, hi) of a matrix (an expert's gate or up)."""
    if isinstance(m, DenseMatrix):
        return DenseMatrix(np.ascontiguousarray(m.values[lo:hi]))
    return QuantMatrix(
        np.ascontiguousarray(m.codes[lo:hi]), np.ascontiguousarray(m.scale_bits[lo:hi])
    )


def cols_band(m: Matrix, lo: int, hi: int) -> Matrix:
    """Columns [lo, hi) of a matrix (an expert's down); lo and hi are whole blocks."""
    if isinstance(m, DenseMatrix):
        return DenseMatrix(np.ascontiguousarray(m.values[:, lo:hi]))
    codes = np.ascontiguousarray(m.codes[:, lo:hi])
    return QuantMatrix(codes, np.ascontiguousarray(m.scale_bits[:, lo // QBLOCK : hi // QBLOCK]))


def split_experts(
    gate: Matrix, up: Matrix, down: Matrix, ne: int, ie: int
) -> tuple[ExpertWeights, ...]:
    """One layer's stacked gate/up/down cut into its E experts (spec/vqf.md §text-tensors)."""
    return tuple(
        ExpertWeights(
            gate=rows_band(gate, e * ie, (e + 1) * ie),
            up=rows_band(up, e * ie, (e + 1) * ie),
            down=cols_band(down, e * ie, (e + 1) * ie),
        )
        for e in range(ne)
    )


@dataclass(frozen=True)
class MoePlan:
    """What a version-3 file binds: config, projection set, lm_head name (None: tied)."""

    config: Qwen3MoeConfig
    projection_set: str
    lm_name: str | None


def moe_plan(vqf: VQFFile, projection_set: str | None = None) -> MoePlan:
    """Refuse what the Qwen3-MoE decoder cannot bind, then plan the binding (shared by the
    reference and the fast binder, so both refuse the same way and in the same order)."""
    a = require_moe_arch(vqf)
    pset = choose_projection_set(vqf, projection_set)
    if pset == "q8" and vqf.header.flags & (VQFFlag.G256 | VQFFlag.Q8BUF_Q4):
        # the engine's expert kernels are Q4 and Q8 (spec/vqf.md §text-tensors); 256-wide scale runs
        # would not stay inside one expert's down band
        raise UnsupportedError("vqf.bind.unsupported", "G256 / Q4I8 expert matrices are not bound",
                               path="flags")  # fmt: skip
    require_bands(a)
    names = {e.name for e in vqf.entries}
    lm_name = next((f"{f}_lm" for f in (pset, "q4", "q8") if f"{f}_lm" in names), None)
    dense = config_from_arch(a, tied=lm_name is None)
    try:
        c = Qwen3MoeConfig(
            **{f: getattr(dense, f) for f in dense.__dataclass_fields__},
            num_experts=a["n_experts"],
            num_experts_per_tok=a["top_k"],
            moe_intermediate_size=a["moe_ffn"],
        )
    except ValueError as exc:  # the checks above leave none: our bug if it happens
        raise RuntimeError(f"MoE config after the arch checks: {exc}") from None
    return MoePlan(c, pset, lm_name)


def bind_vqf(
    vqf: VQFFile, matrix_words: MatrixWords = codec_matrix_words, projection_set: str | None = None
) -> tuple[Qwen3MoeConfig, MoeModelWeights]:
    """The decoder config and weights of a Qwen3-MoE (version 3) VQF file."""
    p = moe_plan(vqf, projection_set)
    c, pset = p.config, p.projection_set
    nl, d, hd, ff = c.num_hidden_layers, c.hidden_size, c.head_dim, c.intermediate_size
    shapes = {
        "q": (c.q_dim, d),
        "k": (c.kv_dim, d),
        "v": (c.kv_dim, d),
        "o": (d, c.q_dim),
        "gate": (ff, d),
        "up": (ff, d),
        "down": (d, ff),
    }
    m = {k: read_matrices(vqf, f"{pset}_{k}", nl, *oi, matrix_words) for k, oi in shapes.items()}
    router = read_router(vqf, nl, c.num_experts, d)
    norms = {n: read_norm(vqf, n, nl, d) for n in ("attn_norm", "ffn_norm")}
    norms |= {n: read_norm(vqf, n, nl, hd) for n in ("q_norm", "k_norm")}
    ne, ie = c.num_experts, c.moe_intermediate_size
    layers = tuple(
        MoeLayerWeights(
            attn_norm=norms["attn_norm"][i],
            q_proj=m["q"][i],
            k_proj=m["k"][i],
            v_proj=m["v"][i],
            q_norm=norms["q_norm"][i],
            k_norm=norms["k_norm"][i],
            o_proj=m["o"][i],
            ffn_norm=norms["ffn_norm"][i],
            router=router[i],
            experts=split_experts(m["gate"][i], m["up"][i], m["down"][i], ne, ie),
        )
        for i in range(nl)
    )
    lm = None
    if p.lm_name is not None:
        lm = read_matrices(vqf, p.lm_name, 1, c.vocab_size, d, matrix_words)[0]
    weights = MoeModelWeights(
        embed=read_embedding(vqf, c),
        layers=layers,
        final_norm=read_norm(vqf, "final_norm", 1, d)[0],
        lm_head=lm,
    )
    return c, weights
