"""The minimal importer: a Hugging Face Qwen3 checkpoint folder -> a VQF file (vqf.md §7.1, §8).

The minimal importer. The arch comes from config.json (§8); the tensors follow the §7.1
inventory, every per-layer matrix stacked layer after layer, each layer encoded by the codec
that the flags and the matrix shape select (spec/codecs/vqf/registry.py), so what the importer
writes is exactly what the binder reads back.

qtype picks the projection family: q8_0 -> q8_* (wmode q8), q4_0 -> q4_* (wmode q4). f32 and
f16 are *reference-precision* files for diffing against transformers: the projections are
stored under the q8_* names with qtype F32 / F16, which the engine does not read and the strict
validator reports (vqf.directory.qtype); ref/model/bind_vqf.py binds them as float32 matrices.
The token embedding is F16 (EMB_F16, truncating like the engine writer, §5.2) except at f32.
lm_head is always written: the checkpoint's lm_head, or the tied embedding (§7.1 table).

The checkpoint's tokenizer.json is copied to `<out>.tokenizer.json` and its chat template (if
any) to `<out>.chat_template.jinja`: a VQF carries neither, and the frontend looks for both.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.model.hf_names import (
    EMBED,
    FINAL_NORM,
    LM_HEAD,
    VQF_NORMS,
    VQF_PROJECTIONS,
    config_from_hf,
    layer_tensor,
)
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.hf_checkpoint import read_config, read_state_dict
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.codecs.vqf.registry import codec_for
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

QTYPES = {"f32": QType.F32, "f16": QType.F16, "q8_0": QType.Q8_0, "q4_0": QType.Q4_0}
LAYOUTS = ("legacy", "tiled")
MAX_SEQ_LEN = 8192  # converters clamp max_seq_len (§8)
SIDECAR_SUFFIX = ".tokenizer.json"
CHAT_TEMPLATE_SUFFIX = ".chat_template.jinja"


def tokenizer_sidecar(model: str | os.PathLike[str]) -> Path:
    """Where the tokenizer of a VQF file lives: `<model>.tokenizer.json`."""
    return Path(str(model) + SIDECAR_SUFFIX)


def first_id(value: Any) -> int:
    """A token id from config.json; a list gives its first (the engine's parse gives 0)."""
    if isinstance(value, list):
        value = value[0] if value else 0
    return int(value) if isinstance(value, int) else 0


def arch_from_config(cfg: Mapping[str, Any], c: Qwen3Config) -> dict[str, Any]:
    """§8: the text-core arch fields of a dense Qwen3 (has_q_norm = 1, head_dim_full = head_dim)."""
    return {
        "dim": c.hidden_size,
        "n_layers": c.num_hidden_layers,
        "n_heads": c.num_attention_heads,
        "n_kv_heads": c.num_key_value_heads,
        "head_dim": c.head_dim,
        "ffn_dim": c.intermediate_size,
        "vocab_size": c.vocab_size,
        "max_seq_len": min(int(cfg.get("max_position_embeddings") or MAX_SEQ_LEN), MAX_SEQ_LEN),
        "rope_theta": c.rope_theta,
        "norm_eps": c.rms_norm_eps,
        "bos_id": first_id(cfg.get("bos_token_id")),
        "eos_id": first_id(cfg.get("eos_token_id")),
        "has_q_norm": 1,
        "head_dim_full": c.head_dim,
    }


def file_flags(qtype: QType, layout: str) -> int:
    """EMB_F16 unless f32; the tiling flags of §2.5 with layout tiled."""
    flags = 0 if qtype == QType.F32 else VQFFlag.EMB_F16
    if layout == "tiled":
        flags |= VQFFlag.Q8_8X8 | VQFFlag.Q4_4X4
    return int(flags)


#: Where the encoders come from: the reference codecs, or (the CLI's default) the fast ones,
#: which produce the same bytes (tests/differential).
REF_CODECS = "weightfile.ref.codecs.vqf"


def encode(qtype: QType, flags: int, name: str, m: np.ndarray, codecs: str = REF_CODECS) -> bytes:
    """One [out, in] matrix in the layout the flags and its shape select (§5, §7.1)."""
    rows, cols = m.shape
    if qtype == QType.F32:
        codec = "f32"
    elif qtype == QType.F16:
        codec = "f16"
    else:
        codec = codec_for(qtype, flags, name, shape=(rows, cols))
    return import_module(codecs).codec(codec).encode(m, rows, cols)


def require(sd: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    """The tensor `name` with `shape`, or a typed error naming it."""
    if name not in sd:
        raise NotFoundError("vqf.import.missing_tensor", f"{name} is missing", path=name)
    t = sd[name]
    if tuple(t.shape) != shape:
        raise InvalidError("vqf.import.shape", f"{name}: shape {t.shape}, want {shape}", path=name)
    return np.ascontiguousarray(t, dtype=np.float32)


def build_tensors(
    sd: Mapping[str, np.ndarray], c: Qwen3Config, qtype: QType, flags: int, codecs: str = REF_CODECS
) -> list[TensorSource]:
    """The §7.1 inventory of wmode q8 (or q4) from a transformers state dict."""
    d, hd, nl = c.hidden_size, c.head_dim, c.num_hidden_layers
    family = "q4" if qtype == QType.Q4_0 else "q8"
    embed = require(sd, EMBED, (c.vocab_size, d))
    if qtype == QType.F32:
        out = [TensorSource("token_embed", QType.F32, c.vocab_size, d, embed.tobytes())]
    else:
        f16 = import_module(f"{codecs}.f16")
        data = f16.encode(embed, c.vocab_size, d, mode="trunc_ftz")
        out = [TensorSource("token_embed", QType.F16, c.vocab_size, d, data)]
    final = require(sd, FINAL_NORM, (d,))
    out.append(TensorSource("final_norm", QType.F32, d, 1, final.tobytes()))
    for field, vqf_name in VQF_NORMS.items():
        n = hd if field in ("q_norm", "k_norm") else d
        stacked = b"".join(require(sd, layer_tensor(i, field), (n,)).tobytes() for i in range(nl))
        out.append(TensorSource(vqf_name, QType.F32, nl * n, 1, stacked))
    shapes = {
        "q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
        "o_proj": (d, c.q_dim), "gate_proj": (c.intermediate_size, d),
        "up_proj": (c.intermediate_size, d), "down_proj": (d, c.intermediate_size),
    }  # fmt: skip
    for field, short in VQF_PROJECTIONS.items():
        name = f"{family}_{short}"
        rows, cols = shapes[field]
        mats = [require(sd, layer_tensor(i, field), (rows, cols)) for i in range(nl)]
        parts = [encode(qtype, flags, name, m, codecs) for m in mats]
        # directory shape of §7.1: nl·in × out
        out.append(TensorSource(name, qtype, nl * cols, rows, b"".join(parts)))
    lm = require(sd, LM_HEAD, (c.vocab_size, d)) if LM_HEAD in sd else embed
    name = f"{family}_lm"
    out.append(TensorSource(name, qtype, c.vocab_size, d, encode(qtype, flags, name, lm, codecs)))
    return out


def require_tileable(c: Qwen3Config, qtype: QType, layout: str) -> None:
    """Tiled files need every matrix to be whole row groups (8 rows Q8, 4 rows Q4; §7.5)."""
    group = {QType.Q8_0: 8, QType.Q4_0: 4}.get(qtype)
    if layout != "tiled" or group is None:
        return
    rows = {"vocab": c.vocab_size, "q": c.q_dim, "kv": c.kv_dim, "hidden": c.hidden_size,
            "intermediate": c.intermediate_size}  # fmt: skip
    for what, n in rows.items():
        if n % group:
            raise UnsupportedError(
                "vqf.import.geometry",
                f"{what} size {n} is not a multiple of {group}: use --layout legacy (§7.5)",
                path="layout",
            )


def import_checkpoint(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    qtype: str = "q8_0",
    layout: str = "legacy",
    overwrite: bool = False,
    codecs: str = REF_CODECS,
) -> Path:
    """Write the VQF of the checkpoint in `folder` to `out`; copy its tokenizer.json beside it."""
    if qtype not in QTYPES:
        raise UnsupportedError("vqf.import.qtype", f"qtype {qtype!r}", path="qtype")
    if layout not in LAYOUTS:
        raise UnsupportedError("vqf.import.layout", f"layout {layout!r}", path="layout")
    src = Path(folder)
    cfg = read_config(src)
    try:
        c = config_from_hf(cfg)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidError(
            "vqf.import.config", f"not a Qwen3 config: {exc}", path="config.json"
        ) from None
    if c.hidden_size % 32 or c.intermediate_size % 32 or c.q_dim % 32:
        raise UnsupportedError(
            "vqf.import.geometry", "hidden, intermediate and q sizes must be multiples of 32"
        )
    q = QTYPES[qtype]
    require_tileable(c, q, layout)
    sd = read_state_dict(src)
    flags = file_flags(q, layout)
    tensors = build_tensors(sd, c, q, flags, codecs)
    path = write_vqf(out, arch=arch_from_config(cfg, c), tensors=tensors, flags=flags,
                     overwrite=overwrite)  # fmt: skip
    tok = src / "tokenizer.json"
    if tok.is_file():
        shutil.copyfile(tok, tokenizer_sidecar(path))
    template = chat_template(src)
    if template is not None:
        Path(str(path) + CHAT_TEMPLATE_SUFFIX).write_text(template, encoding="utf-8")
    return path


def chat_template(folder: Path) -> str | None:
    """The checkpoint's chat template: chat_template.jinja, or tokenizer_config.json's string."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    if config.is_file():
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            return None  # the template is optional; a broken config just has none
        return value if isinstance(value, str) else None
    return None
