"""A Hugging Face Qwen3-MoE checkpoint folder -> a version-3 VQF file (spec/vqf.md §text-tensors,
§arch-semantics; spec/models.md §qwen3-moe-vqf-v3).

What a version-3 file means is fixed (spec/models.md §qwen3-moe-vqf-v3): every layer is MoE, the k
chosen weights are renormalised, there is no shared expert. A checkpoint whose config says otherwise
(`norm_topk_prob` false, a non-empty `mlp_only_layers`, `decoder_sparse_step` other than 1, a
shared expert) cannot be written faithfully and is refused (vqf.import.moe_config) before a
tensor is read.

The inventory is the dense importer's (weightfile/families/qwen3/to_vqf.py: embedding, norms,
attention projections, lm_head) plus `moe_router` (F32, the layers' routers stacked
[nl·E, d]) and the stacked expert matrices: per layer, gate and up are the experts' encodings
one after the other (expert e's rows [e·Ie, (e+1)·Ie)), down the experts' column bands joined
block column by block column (`weightfile.ref.qwen3_moe.bands`). Every expert matrix is read
from the checkpoint, encoded and dropped one at a time; only encoded bytes are kept. q8_0 /
q4_0 in legacy (untiled) or tiled layout; f32 / f16 reference-precision files as for dense.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from weightfile.convert.checkpoint import Checkpoint, chat_template, read_json
from weightfile.convert.config_values import check_config_values
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.families.qwen3.to_vqf import (
    LAYOUTS,
    QTYPES,
    RULES,
    arch_from_config,
    check_destinations,
    publish_protected,
    require,
    write_sidecars,
)
from weightfile.families.qwen3_moe.hf_names import (
    ARCHITECTURE,
    MODEL_TYPE,
    expert_tensor,
    router_tensor,
)
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3_moe.bands import join_col_bands
from weightfile.ref.vqf.encode import encode, file_flags
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

CONFIG_RULE = "vqf.import.moe_config"


def is_qwen3_moe(cfg: Mapping[str, Any]) -> bool:
    """Whether config.json describes a Qwen3-MoE model (architectures or model_type)."""
    archs = cfg.get("architectures")
    return cfg.get("model_type") == MODEL_TYPE or (
        isinstance(archs, list) and ARCHITECTURE in archs
    )


def refuse_inexpressible(cfg: Mapping[str, Any]) -> None:
    """Refuse a config a version-3 file cannot state (spec/models.md §qwen3-moe-vqf-v3;
    vqf.import.moe_config): the file means all layers MoE, normalised top-k, no shared expert."""

    def refuse(key: str, why: str) -> None:
        raise UnsupportedError(
            CONFIG_RULE, f"{key} = {cfg.get(key)!r}: {why}", path=f"config.json.{key}"
        )

    if cfg.get("norm_topk_prob") is not True:
        refuse("norm_topk_prob", "a version-3 file always renormalises the top-k weights")
    if cfg.get("mlp_only_layers") not in (None, []):
        refuse("mlp_only_layers", "every layer of a version-3 file is MoE")
    if cfg.get("decoder_sparse_step", 1) != 1:
        refuse("decoder_sparse_step", "every layer of a version-3 file is MoE")
    for key in ("shared_expert_intermediate_size", "n_shared_experts", "num_shared_experts"):
        if cfg.get(key):
            refuse(key, "Qwen3-MoE files have no shared expert")


def moe_sizes(cfg: Mapping[str, Any]) -> tuple[int, int, int]:
    """(E, k, Ie) from config.json, checked: E > 0, 0 < k <= E, Ie > 0."""
    try:
        # transformers 5 writes num_local_experts (its attribute map reads num_experts from it)
        ne = int(cfg["num_experts"] if "num_experts" in cfg else cfg["num_local_experts"])
        k = int(cfg["num_experts_per_tok"])
        ie = int(cfg["moe_intermediate_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidError(
            RULES.config, f"not a Qwen3-MoE config: {exc!r}", path="config.json"
        ) from None
    if ne <= 0 or not 0 < k <= ne or ie <= 0:
        raise InvalidError(
            RULES.config,
            f"num_experts {ne}, num_experts_per_tok {k}, moe_intermediate_size {ie}",
            path="config.json",
        )
    return ne, k, ie


def require_geometry(c: Qwen3Config, ie: int, qtype: QType, layout: str) -> None:
    """Matrix widths whole 32-blocks (Ie too: down's expert bands), and in tiled files every
    tile group inside one expert (spec/vqf.md §text-tensors, §repack-gates; vqf.import.geometry)."""
    if c.hidden_size % 32 or c.q_dim % 32 or ie % 32:
        raise UnsupportedError(
            "vqf.import.geometry", "hidden, q and moe_intermediate sizes must be multiples of 32"
        )
    group = {QType.Q8_0: 8, QType.Q4_0: 4}.get(qtype)
    if layout != "tiled" or group is None:
        return
    for what, n in {
        "vocab": c.vocab_size,
        "q": c.q_dim,
        "kv": c.kv_dim,
        "hidden": c.hidden_size,
        "moe_intermediate": ie,
    }.items():
        if n % group:
            raise UnsupportedError(
                "vqf.import.geometry",
                f"{what} size {n} is not a multiple of {group}: use --layout legacy (§7.5)",
                path="layout",
            )


def expert_matrices(
    sd: Checkpoint,
    c: Qwen3Config,
    ne: int,
    ie: int,
    qtype: QType,
    flags: int,
    projection_set: str,
    backend: Backend,
) -> list[TensorSource]:
    """{projection_set}_gate, _up, _down: every layer's experts stacked (spec/vqf.md
    §text-tensors)."""
    d, nl, ff = c.hidden_size, c.num_hidden_layers, ne * ie
    out = []
    for role in ("gate", "up"):
        name = f"{projection_set}_{role}"
        parts = [
            encode(qtype, flags, name, require(sd, expert_tensor(i, e, role), (ie, d)), backend)
            for i in range(nl)
            for e in range(ne)
        ]
        out.append(TensorSource(name, qtype, nl * ff, d, b"".join(parts)))
    name = f"{projection_set}_down"
    codec = {QType.F32: "f32", QType.F16: "f16"}.get(qtype) or codec_for(
        qtype, flags, name, shape=(d, ie)
    )
    layers = []
    for i in range(nl):
        bands = [
            encode(qtype, flags, name, require(sd, expert_tensor(i, e, "down"), (d, ie)), backend)
            for e in range(ne)
        ]
        layers.append(join_col_bands(codec, bands, d, ie))
    out.append(TensorSource(name, qtype, nl * d, ff, b"".join(layers)))
    return out


def build_tensors(
    sd: Checkpoint, c: Qwen3Config, ne: int, ie: int, qtype: QType, flags: int, backend: Backend
) -> list[TensorSource]:
    """The spec/vqf.md §text-tensors inventory of a version-3 file, read tensor by tensor."""
    d, hd, nl = c.hidden_size, c.head_dim, c.num_hidden_layers
    projection_set = "q4" if qtype == QType.Q4_0 else "q8"
    embed = require(sd, EMBED, (c.vocab_size, d))
    if qtype == QType.F32:
        out = [TensorSource("token_embed", QType.F32, c.vocab_size, d, embed.tobytes())]
    else:
        # truncating like the engine writer, as the dense importer does (spec/vqf.md §f16)
        data = backend.vqf_codecs.codec("f16").encode(embed, c.vocab_size, d, mode="trunc_ftz")
        out = [TensorSource("token_embed", QType.F16, c.vocab_size, d, data)]
    out.append(TensorSource("final_norm", QType.F32, d, 1, require(sd, FINAL_NORM, (d,)).tobytes()))
    for field in ("attn_norm", "ffn_norm", "q_norm", "k_norm"):
        n = hd if field in ("q_norm", "k_norm") else d
        data = b"".join(require(sd, layer_tensor(i, field), (n,)).tobytes() for i in range(nl))
        out.append(TensorSource(field, QType.F32, nl * n, 1, data))
    router = b"".join(require(sd, router_tensor(i), (ne, d)).tobytes() for i in range(nl))
    out.append(TensorSource("moe_router", QType.F32, nl * ne, d, router))
    shapes = {
        "q_proj": (c.q_dim, d),
        "k_proj": (c.kv_dim, d),
        "v_proj": (c.kv_dim, d),
        "o_proj": (d, c.q_dim),
    }
    for field, (rows, cols) in shapes.items():
        name = f"{projection_set}_{field[0]}"
        parts = [
            encode(qtype, flags, name, require(sd, layer_tensor(i, field), (rows, cols)), backend)
            for i in range(nl)
        ]
        out.append(TensorSource(name, qtype, nl * cols, rows, b"".join(parts)))
    out += expert_matrices(sd, c, ne, ie, qtype, flags, projection_set, backend)
    lm = require(sd, LM_HEAD, (c.vocab_size, d)) if LM_HEAD in sd else embed
    name = f"{projection_set}_lm"
    out.append(TensorSource(name, qtype, c.vocab_size, d, encode(qtype, flags, name, lm, backend)))
    return out


def import_qwen3_moe(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    qtype: str = "q8_0",
    layout: str = "legacy",
    overwrite: bool = False,
    backend: Backend = REFERENCE,
    passphrase: bytes | None = None,
    sign_key: bytes | None = None,
) -> Path:
    """Write the version-3 VQF of the Qwen3-MoE checkpoint in `folder` to `out` (with the
    tokenizer and chat template sidecars, and optionally protected, as the dense importer)."""
    if qtype not in QTYPES:
        raise UnsupportedError("vqf.import.qtype", f"qtype {qtype!r}", path="qtype")
    if layout not in LAYOUTS:
        raise UnsupportedError("vqf.import.layout", f"layout {layout!r}", path="layout")
    check_destinations(out, overwrite)  # before converting, not after
    src = Path(folder)
    cfg = read_json(src, "config.json", RULES)
    chat_template(src, RULES)  # a template that is not text refuses before anything is written
    refuse_inexpressible(cfg)
    ne, k, ie = moe_sizes(cfg)
    check_config_values({"intermediate_size": ne * ie}, RULES.config, "num_experts x moe_ffn")
    try:
        c = config_from_hf({**cfg, "intermediate_size": ne * ie})
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidError(
            "vqf.import.config", f"not a Qwen3 config: {exc}", path="config.json"
        ) from None
    q = QTYPES[qtype]
    require_geometry(c, ie, q, layout)
    flags = file_flags(q, layout) | int(VQFFlag.MOE)
    with Checkpoint(src, RULES) as checkpoint:
        checkpoint.require_float_dtypes()
        tensors = build_tensors(checkpoint, c, ne, ie, q, flags, backend)
    arch = {**arch_from_config(cfg, c), "n_experts": ne, "moe_ffn": ie, "top_k": k}
    if passphrase is None and sign_key is None:
        path = write_vqf(out, arch=arch, tensors=tensors, flags=flags, overwrite=overwrite)
    else:
        path = publish_protected(out, arch, tensors, flags, overwrite, passphrase, sign_key)
    write_sidecars(src, path)
    return path
