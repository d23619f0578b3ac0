"""Bind a VQF file to the Qwen3 decoder: arch -> config, inventory -> weights (spec/vqf.md
§inventory, §arch-semantics).

Shapes come from the arch, never from the directory's diagnostic rows/cols (spec/vqf.md §geometry).
Per-layer tensors are stacked layer after layer (spec/vqf.md §text-tensors): layer l of a matrix
[out, in] is the byte range [l·B(out·in), (l+1)·B(out·in)) of the payload, B the size function of
spec/vqf.md §size-function. F32 and F16 tensors are read here; a quantized matrix's bytes go to
`matrix_words`, the codec hook that returns its logical words (so tiled layouts, G256 and Q4I8 are
the codecs' business, not the binder's).

Rule ids raised here: the `vqf.bind.*` rows of spec/vqf/rules.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from weightfile.ref.codecs.vqf import codec as vqf_codec
from weightfile.ref.numerics.matrix import DenseMatrix, Matrix, QuantMatrix
from weightfile.ref.vqf.read import Entry, VQFFile
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.vqf.qtypes import QType, tensor_bytes

from .config import Qwen3Config
from .weights import LayerWeights, ModelWeights, widen_f16

#: (name, qtype, flags, payload of one matrix, rows=out, cols=in) -> (codes int8 [rows, cols],
#: scale_bits uint16 [rows, cols/32]). The lead wires this to codec_for(...).decode_words.
MatrixWords = Callable[[str, int, int, bytes, int, int], tuple[np.ndarray, np.ndarray]]

#: The projection sets a file can hold: the q4_* or q8_* matrices. The engine's decode prefers Q4
#: when a file has both (spec/vqf.md §weight-modes).
PROJECTION_SETS = ("q4", "q8")


def require_entry(vqf: VQFFile, name: str) -> Entry:
    """The entry named `name`, or NotFoundError vqf.bind.missing_tensor."""
    if not any(e.name == name for e in vqf.entries):
        raise NotFoundError("vqf.bind.missing_tensor", f"tensor {name!r} is missing", path=name)
    return vqf.entry(name)


def require_layout(e: Entry, allowed: tuple[QType, ...], elements: int) -> None:
    """The entry's qtype is allowed and rows·cols and bytes match the arch (spec/vqf.md
    §size-function, §geometry)."""
    where = {"offset": e.entry_offset, "path": f"directory[{e.index}]"}
    if e.qtype not in allowed:
        names = "/".join(q.name for q in allowed)
        raise InvalidError("vqf.bind.qtype", f"{e.name}: qtype {e.qtype}, want {names}", **where)
    if e.rows * e.cols != elements or e.bytes != tensor_bytes(e.qtype, elements):
        raise InvalidError(
            "vqf.bind.size",
            f"{e.name}: {e.rows}x{e.cols} in {e.bytes} bytes, the arch implies {elements} elements",
            **where,
        )


def config_from_arch(arch: dict, tied: bool) -> Qwen3Config:
    """spec/vqf.md §arch-semantics arch fields -> Qwen3Config; MRoPE sections when has_mrope."""
    sections = None
    if arch.get("has_mrope"):
        sections = tuple(arch["mrope_sections"][: arch["mrope_n_sec"]])
    try:
        return Qwen3Config(
            vocab_size=arch["vocab_size"],
            hidden_size=arch["dim"],
            intermediate_size=arch["ffn_dim"],
            num_hidden_layers=arch["n_layers"],
            num_attention_heads=arch["n_heads"],
            num_key_value_heads=arch["n_kv_heads"],
            head_dim=arch["head_dim"],
            rope_theta=arch["rope_theta"],
            rms_norm_eps=arch["norm_eps"],
            tie_word_embeddings=tied,
            mrope_section=sections,
        )
    except (ValueError, ZeroDivisionError) as exc:
        raise InvalidError(
            "vqf.bind.arch", f"arch is not a Qwen3 decoder: {exc}", path="arch"
        ) from None


def choose_projection_set(vqf: VQFFile, projection_set: str | None) -> str:
    """The projection set to bind (q4_* or q8_* matrices): the one asked for, else q4 if present,
    else q8. The error keeps the rule's word (vqf.bind.unsupported: "an unknown family")."""
    if projection_set is not None and projection_set not in PROJECTION_SETS:
        raise UnsupportedError(
            "vqf.bind.unsupported", f"unknown family {projection_set!r}", path="family"
        )
    present = [f for f in PROJECTION_SETS if any(e.name == f"{f}_q" for e in vqf.entries)]
    if projection_set is None:
        if not present:
            raise NotFoundError("vqf.bind.missing_tensor", "neither q4_q nor q8_q", path="q8_q")
        return present[0]
    return projection_set


def read_embedding(vqf: VQFFile, c: Qwen3Config) -> np.ndarray:
    """token_embed [V, d]: F16 widened exactly, or F32 (spec/vqf.md §f32, §f16)."""
    e = require_entry(vqf, "token_embed")
    require_layout(e, (QType.F16, QType.F32), c.vocab_size * c.hidden_size)
    raw = bytes(vqf.payload(e))
    if e.qtype == QType.F16:
        values = widen_f16(np.frombuffer(raw, dtype="<u2"))
    else:
        values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    return values.reshape(c.vocab_size, c.hidden_size)


def read_norm(vqf: VQFFile, name: str, layers: int, length: int) -> list[np.ndarray]:
    """An F32 norm weight stacked over `layers`: one float32 [length] per layer."""
    e = require_entry(vqf, name)
    require_layout(e, (QType.F32,), layers * length)
    flat = np.frombuffer(bytes(vqf.payload(e)), dtype="<f4").astype(np.float32)
    return [flat[i * length : (i + 1) * length] for i in range(layers)]


def dense_values(qtype: int, raw: bytes) -> np.ndarray:
    """F32 words, or F16 words widened exactly, as flat float32."""
    if qtype == QType.F16:
        return widen_f16(np.frombuffer(raw, dtype="<u2"))
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def read_matrices(
    vqf: VQFFile, name: str, layers: int, out: int, inp: int, words: MatrixWords
) -> list[Matrix]:
    """A stacked matrix: layer l is bytes [l·B(out·in), (l+1)·B(out·in)) (spec/vqf.md
    §text-tensors).

    Q8_0 / Q4_0 go through the codec hook; F32 / F16 (the importer's reference-precision
    files, outside the engine's inventory) bind as float32 matrices."""
    e = require_entry(vqf, name)
    require_layout(e, (QType.Q8_0, QType.Q4_0, QType.F32, QType.F16), layers * out * inp)
    payload = vqf.payload(e)
    step = tensor_bytes(e.qtype, out * inp)
    mats: list[Matrix] = []
    for layer in range(layers):
        chunk = bytes(payload[layer * step : (layer + 1) * step])
        if e.qtype in (QType.F32, QType.F16):  # reference precision (families/qwen3/to_vqf.py)
            mats.append(DenseMatrix(dense_values(e.qtype, chunk).reshape(out, inp)))
            continue
        codes, scale_bits = words(name, e.qtype, vqf.header.flags, chunk, out, inp)
        mats.append(QuantMatrix(np.asarray(codes, np.int8), np.asarray(scale_bits, np.uint16)))
    return mats


def codec_matrix_words(
    name: str, qtype: int, flags: int, payload: bytes, rows: int, cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """The reference codecs as the binder's hook: signed codes and f16 scale bits (spec/vqf.md
    §encodings, §text-tensors).

    The codec is the one the flags and name select for this [rows, cols] matrix; Q4 nibbles
    n become the signed code n − 8 the value formula uses ((n − 8)·d, spec/vqf.md §q4-0).
    """
    codec = codec_for(qtype, flags, name, shape=(rows, cols))
    words = vqf_codec(codec).decode_words(payload, rows, cols)
    codes = words["codes"]
    if codes.dtype == np.uint8:  # Q4 nibbles
        codes = (codes.astype(np.int16) - 8).astype(np.int8)
    return codes.astype(np.int8), words["scales"]


@dataclass(frozen=True)
class DensePlan:
    """What a dense Qwen3 VQF binds (spec/vqf.md §text-tensors): its config, projection set, lm_head
    tensor name (None: tied to token_embed) and the physical [out, in] shape of each per-layer
    matrix."""

    config: Qwen3Config
    projection_set: str
    lm_name: str | None
    shapes: dict[str, tuple[int, int]]


def dense_plan(vqf: VQFFile, projection_set: str | None = None) -> DensePlan:
    """Refuse what the Qwen3 decoder cannot bind (MoE, no q/k norms), then plan the binding.

    Shared by every binder (the reference's and the fast path's), so both refuse and pick the
    same way."""
    arch = vqf.header.arch
    if vqf.header.is_moe or arch.get("n_experts"):
        raise UnsupportedError(
            "vqf.bind.unsupported", "a MoE file: the qwen3_moe family", path="flags"
        )
    if not arch.get("has_q_norm"):
        raise UnsupportedError("vqf.bind.unsupported", "Qwen3 needs q/k norms", path="arch")
    pset = choose_projection_set(vqf, projection_set)
    names = {e.name for e in vqf.entries}
    lm_name = next((f"{f}_lm" for f in (pset, *PROJECTION_SETS) if f"{f}_lm" in names), None)
    c = config_from_arch(arch, tied=lm_name is None)
    d = c.hidden_size
    shapes = {  # physical [out, in] per layer (spec/vqf.md §text-tensors)
        "q": (c.q_dim, d), "k": (c.kv_dim, d), "v": (c.kv_dim, d), "o": (d, c.q_dim),
        "gate": (c.intermediate_size, d), "up": (c.intermediate_size, d),
        "down": (d, c.intermediate_size),
    }  # fmt: skip
    return DensePlan(c, pset, lm_name, shapes)


def bind_vqf(
    vqf: VQFFile, matrix_words: MatrixWords = codec_matrix_words, projection_set: str | None = None
) -> tuple[Qwen3Config, ModelWeights]:
    """The decoder config and weights of a dense Qwen3 (or Qwen3-VL text tower) VQF file."""
    p = dense_plan(vqf, projection_set)
    c, pset, lm_name, shapes = p.config, p.projection_set, p.lm_name, p.shapes
    nl, d, hd = c.num_hidden_layers, c.hidden_size, c.head_dim
    m = {k: read_matrices(vqf, f"{pset}_{k}", nl, *oi, matrix_words) for k, oi in shapes.items()}
    norms = {n: read_norm(vqf, n, nl, d) for n in ("attn_norm", "ffn_norm")}
    norms |= {n: read_norm(vqf, n, nl, hd) for n in ("q_norm", "k_norm")}
    layers = tuple(
        LayerWeights(
            attn_norm=norms["attn_norm"][i],
            q_proj=m["q"][i],
            k_proj=m["k"][i],
            v_proj=m["v"][i],
            q_norm=norms["q_norm"][i],
            k_norm=norms["k_norm"][i],
            o_proj=m["o"][i],
            ffn_norm=norms["ffn_norm"][i],
            gate_proj=m["gate"][i],
            up_proj=m["up"][i],
            down_proj=m["down"][i],
        )
        for i in range(nl)
    )
    lm = None
    if lm_name is not None:
        lm = read_matrices(vqf, lm_name, 1, c.vocab_size, d, matrix_words)[0]
    weights = ModelWeights(
        embed=read_embedding(vqf, c),
        layers=layers,
        final_norm=read_norm(vqf, "final_norm", 1, d)[0],
        lm_head=lm,
    )
    return c, weights
