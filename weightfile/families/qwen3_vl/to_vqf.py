"""A Hugging Face Qwen3-VL checkpoint folder -> a VISION VQF file (spec/vqf.md §text-tensors,
§vision-tensors, §arch-semantics).

The text tower goes through the Qwen3 importer's `build_tensors` on a view of the checkpoint under
Qwen3's names (`qwen3_vl.hf_names.TextView`), so both write the text tensors one way. The vision
tower follows spec/vqf.md §vision-tensors: the four block matrices as Q8_0 legacy whatever the text
qtype (the fc2 rows zero-padded to a multiple of 32 columns first), everything else F32. The arch
takes the nested `text_config` / `vision_config` and the top-level special token ids (spec/vqf.md
§arch-semantics).

Refusals: `vqf.import.config` (not a Qwen3-VL config, or a vision tower the file cannot describe:
more than 4 DeepStack indexes, an activation other than gelu_pytorch_tanh) and the shared
`vqf.import.*` rows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.convert.checkpoint import Checkpoint, chat_template, read_json
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.to_vqf import (
    LAYOUTS,
    QTYPES,
    RULES,
    arch_from_config,
    build_tensors,
    check_destinations,
    publish_protected,
    require,
    require_tileable,
    write_sidecars,
)
from weightfile.families.qwen3_vl.hf_names import (
    PATCH_BIAS,
    PATCH_EMBED,
    POS_EMBED,
    TextView,
    block_tensor,
    merger_tensor,
)
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.encode import encode, file_flags
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import KINDS, VISION_KINDS, Geometry
from weightfile.spec.vqf.qtypes import QType

ARCHITECTURE = "Qwen3VLForConditionalGeneration"
DEFAULT_MROPE = (24, 20, 20)  # spec/models.md §qwen3-vl: when rope_parameters has no mrope_section
MAX_DEEPSTACK = 4  # vis_ds_idx has four slots (spec/vqf.md §header-layout)


def is_qwen3_vl(cfg: Mapping[str, Any]) -> bool:
    """config.json of a Qwen3-VL checkpoint: model_type qwen3_vl, or the architecture's name."""
    return cfg.get("model_type") == "qwen3_vl" or ARCHITECTURE in (cfg.get("architectures") or [])


def _config_error(detail: str) -> InvalidError:
    return InvalidError("vqf.import.config", f"not a Qwen3-VL config: {detail}", path="config.json")


def text_config(cfg: Mapping[str, Any]) -> tuple[dict[str, Any], Qwen3Config]:
    """The text_config keys (with top-level fallbacks) and the text tower's Qwen3Config."""
    tc = cfg.get("text_config")
    if not isinstance(tc, Mapping):
        raise _config_error("no text_config")
    merged = {**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}, **tc}
    if "tie_word_embeddings" in cfg:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    params = merged.get("rope_parameters") or merged.get("rope_scaling") or {}
    sections = tuple(int(s) for s in (params.get("mrope_section") or DEFAULT_MROPE))
    try:
        c = replace(config_from_hf(merged), mrope_section=sections)
    except (KeyError, TypeError, ValueError) as exc:
        raise _config_error(str(exc)) from None
    if len(sections) > 4 or sum(sections) * 2 != c.head_dim:
        raise _config_error(f"mrope_section {list(sections)} does not sum to head_dim/2")
    return merged, c


def vision_arch(cfg: Mapping[str, Any], c: Qwen3Config) -> dict[str, Any]:
    """spec/vqf.md §arch-semantics vision fields and special ids from vision_config and the top
    level."""
    vc = cfg.get("vision_config")
    if not isinstance(vc, Mapping):
        raise _config_error("no vision_config")
    act = vc.get("hidden_act", "gelu_pytorch_tanh")
    if act != "gelu_pytorch_tanh":
        raise _config_error(f"vision hidden_act {act!r}; the tower is gelu_pytorch_tanh")
    try:
        ds = [int(i) for i in vc.get("deepstack_visual_indexes", [])]
        a = {
            "has_vision": 1,
            "vis_depth": int(vc.get("depth", vc.get("num_hidden_layers"))),
            "vis_hidden": int(vc["hidden_size"]),
            "vis_heads": int(vc.get("num_heads", vc.get("num_attention_heads"))),
            "vis_ffn": int(vc["intermediate_size"]),
            "vis_patch": int(vc.get("patch_size", 16)),
            "vis_temporal": int(vc.get("temporal_patch_size", 2)),
            "vis_merge": int(vc.get("spatial_merge_size", 2)),
            "vis_out_dim": int(vc.get("out_hidden_size", c.hidden_size)),
            "vis_in_chan": int(vc.get("in_channels", 3)),
            "vis_max_pos": int(vc["num_position_embeddings"]),
            "vis_ds_count": len(ds),
            "vis_ds_idx": (ds + [0] * MAX_DEEPSTACK)[:MAX_DEEPSTACK],
            "vision_start_id": int(cfg.get("vision_start_token_id", 151652)),
            "vision_end_id": int(cfg.get("vision_end_token_id", 151653)),
            "image_token_id": int(cfg.get("image_token_id", 151655)),
            "video_token_id": int(cfg.get("video_token_id", 151656)),
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise _config_error(f"vision_config: {exc}") from None
    if len(ds) > MAX_DEEPSTACK:
        raise _config_error(f"{len(ds)} DeepStack indexes, the file holds {MAX_DEEPSTACK}")
    if a["vis_hidden"] % 32 or a["vis_in_chan"] != 3:
        raise UnsupportedError(
            "vqf.import.geometry", "vision hidden size must be a multiple of 32, 3 channels"
        )
    sections = list(c.mrope_section or ())
    a |= {"has_mrope": 1, "mrope_n_sec": len(sections)}
    a["mrope_sections"] = (sections + [0] * 4)[:4]
    return a


def build_vision_tensors(
    sd: Mapping[str, np.ndarray], arch: Mapping[str, Any], backend: Backend = REFERENCE
) -> list[TensorSource]:
    """The 27 tensors of spec/vqf.md §vision-tensors in table order; directory rows × cols as the
    inventory states them."""
    g = Geometry.from_arch(arch)
    vh, vf, vfp, vo, mi = g.vh, g.vf, g.vfp, g.vo, g.mi
    patch = (vh, 3, g.vt, g.vp, g.vp)
    matrices = {"v_q8_qkv": (3 * vh, vh), "v_q8_proj": (vh, vh), "v_q8_fc1": (vf, vh),
                "v_q8_fc2": (vh, vf)}  # fmt: skip
    vectors = {"v_qkv_bias": 3 * vh, "v_proj_bias": vh, "v_norm1_w": vh, "v_norm1_b": vh,
               "v_norm2_w": vh, "v_norm2_b": vh, "v_fc1_bias": vf, "v_fc2_bias": vh}  # fmt: skip
    merger = {"nw": (vh,), "nb": (vh,), "f1w": (mi, mi), "f1b": (mi,), "f2w": (vo, mi),
              "f2b": (vo,)}  # fmt: skip
    ds_shape = {**merger, "nw": (mi,), "nb": (mi,)}
    data: dict[str, bytes] = {}
    for name, shape in matrices.items():
        parts = []
        for i in range(g.vd):
            m = require(sd, block_tensor(i, name), shape)
            if name == "v_q8_fc2" and vfp != vf:  # spec/vqf.md §vision-tensors: rows padded with
                # zeros
                m = np.concatenate([m, np.zeros((vh, vfp - vf), np.float32)], axis=1)
            parts.append(encode(QType.Q8_0, 0, name, m, backend))
        data[name] = b"".join(parts)
    data["v_patch_embed"] = require(sd, PATCH_EMBED, patch).tobytes()
    data["v_patch_bias"] = require(sd, PATCH_BIAS, (vh,)).tobytes()
    data["v_pos_embed"] = require(sd, POS_EMBED, (g.vmp, vh)).tobytes()
    for name, n in vectors.items():
        rows = [require(sd, block_tensor(i, name), (n,)) for i in range(g.vd)]
        data[name] = b"".join(r.tobytes() for r in rows)
    for part, shape in merger.items():
        data[f"v_merger_{part}"] = require(sd, merger_tensor(part), shape).tobytes()
    for part, shape in ds_shape.items():
        data[f"v_ds_{part}"] = b"".join(
            require(sd, merger_tensor(part, j), shape).tobytes() for j in range(g.ds)
        )
    return [TensorSource(n, q, r, c, data[n]) for n, q, r, c in vision_directory(arch)]


def vision_directory(arch: Mapping[str, Any]) -> list[tuple[str, QType, int, int]]:
    """(name, qtype, rows, cols) of the 27 vision entries in spec/vqf.md §vision-tensors order: Q8_0
    for the block matrices, F32 for the rest, rows × cols as the inventory states them."""
    g = Geometry.from_arch(arch)
    out = []
    for kind in VISION_KINDS:
        rows, cols = KINDS[kind.name].directory_shape(g)
        qtype = QType.Q8_0 if kind.family == "vision_q8" else QType.F32
        out.append((kind.name, qtype, rows, cols))
    return out


def import_vl_checkpoint(
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
    """Write the VISION VQF of the Qwen3-VL checkpoint in `folder` to `out` (sidecars as the
    Qwen3 importer writes them)."""
    if qtype not in QTYPES:
        raise UnsupportedError("vqf.import.qtype", f"qtype {qtype!r}", path="qtype")
    if layout not in LAYOUTS:
        raise UnsupportedError("vqf.import.layout", f"layout {layout!r}", path="layout")
    check_destinations(out, overwrite)  # before converting, not after
    src = Path(folder)
    cfg = read_json(src, "config.json", RULES)
    chat_template(src, RULES)  # a template that is not text refuses before anything is written
    if not is_qwen3_vl(cfg):
        raise _config_error(f"model_type {cfg.get('model_type')!r}")
    merged, c = text_config(cfg)
    if c.hidden_size % 32 or c.intermediate_size % 32 or c.q_dim % 32:
        raise UnsupportedError(
            "vqf.import.geometry", "hidden, intermediate and q sizes must be multiples of 32"
        )
    q = QTYPES[qtype]
    require_tileable(c, q, layout)
    flags = file_flags(q, layout) | VQFFlag.VISION
    arch = arch_from_config(merged, c) | vision_arch(cfg, c)
    with Checkpoint(src, RULES) as checkpoint:
        checkpoint.require_float_dtypes()
        tensors = build_tensors(TextView(checkpoint), c, q, flags, backend)
        tensors += build_vision_tensors(checkpoint, arch, backend)
    if passphrase is None and sign_key is None:
        path = write_vqf(out, arch=arch, tensors=tensors, flags=int(flags), overwrite=overwrite)
    else:
        path = publish_protected(out, arch, tensors, int(flags), overwrite, passphrase, sign_key)
    write_sidecars(src, path)
    return path
