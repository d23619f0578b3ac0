"""A llama.cpp qwen3moe GGUF file -> a version-3 VQF, copying Q8_0/Q4_0 blocks (spec/vqf.md
§converter).

The inverse of the qwen3moe export (weightfile/convert/vqf_gguf.py `expert_jobs`): per layer the
router `ffn_gate_inp` [E, d] becomes moe_router's rows, `ffn_{gate,up}_exps` [E, Ie, d] the
expert-stacked gate/up rows, and `ffn_down_exps` [E, d, Ie] the column bands of down (spec/vqf.md
§text-tensors MoE stacking). Each expert's blocks are tiled as the Hugging Face MoE importer tiles
them (weightfile/families/qwen3_moe/to_vqf.py, one expert at a time), so GGUF -> VQF writes the
bytes that importer writes from the same weights. Attention, norms, embedding and lm_head go as in
the dense GGUF importer (weightfile/families/qwen3/from_gguf.py); a tensor whose GGUF type is not
its entry's block type is requantized only with `requantize=True`, else `vqf.import.requantize`.
Weight modes q8 and q4 only (the family importers' set, `vqf.import.option` otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.convert.gguf_tokenizer import write_gguf_sidecars
from weightfile.families.qwen3.from_gguf import COPYABLE, GGUFState, hf_config, metadata
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.families.qwen3.to_vqf import (
    VQF_PROJECTIONS,
    arch_from_config,
    checked_config,
    copy_blocks,
    publish_protected,
    row_chunks,
    with_progress,
)
from weightfile.families.qwen3_moe.to_vqf import moe_sizes, refuse_inexpressible, require_geometry
from weightfile.ref.backend import Backend
from weightfile.ref.qwen3_moe.bands import join_col_bands
from weightfile.ref.vqf.encode import encode, file_flags
from weightfile.ref.vqf.write import TensorSource
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for
from weightfile.spec.errors import NotFoundError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

QTYPE_OF_WMODE = {"q8": QType.Q8_0, "q4": QType.Q4_0}


def gguf_tensor(state: GGUFState, name: str) -> Any:
    """A GGUF tensor by its own name, or vqf.import.missing_tensor."""
    for t in state.reader.tensors:
        if t.name == name:
            return t
    raise NotFoundError("vqf.import.missing_tensor", f"{name} is missing", path=name)


def expert_blocks(state: GGUFState, t: Any, base: str, x: int) -> bytes | None:
    """Expert x's plain blocks of a 3-D expert tensor when its type is `base`, else None."""
    if COPYABLE.get(t.tensor_type.name) != base:
        return None
    part = np.asarray(t.data)[x]
    raw = part.tobytes()
    state.release(part)
    return raw


def expert_values(state: GGUFState, t: Any, x: int) -> np.ndarray:
    """Expert x of a 3-D expert tensor as float32, only when requantizing is allowed."""
    from gguf.quants import dequantize

    if not state.requantize and t.tensor_type.name not in ("F32", "F16", "BF16"):
        raise UnsupportedError(
            "vqf.import.requantize",
            f"{t.name} is {t.tensor_type.name}: copying it needs the same block type as its VQF "
            "entry; pass --requantize to dequantize and quantize it again",
            path=t.name,
        )
    part = np.asarray(t.data)[x]
    values = np.ascontiguousarray(dequantize(part, t.tensor_type), dtype=np.float32)
    state.release(part)
    return values


def import_gguf_moe(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    plan: Any,
    overwrite: bool = False,
    backend: Backend,
    requantize: bool = False,
    passphrase: bytes | None = None,
    sign_key: bytes | None = None,
    progress: Any = None,
) -> Path:
    """Write the version-3 VQF of a qwen3moe GGUF file (module docstring); returns the path."""
    from weightfile.fast.vqf.write import write_vqf

    if plan.wmode not in QTYPE_OF_WMODE or plan.x8 or plan.embedding != "f16":
        raise UnsupportedError(
            "vqf.import.option", "qwen3moe GGUF: only --wmode q8|q4 with the default embedding"
        )
    q = QTYPE_OF_WMODE[plan.wmode]
    state = GGUFState(src, requantize=requantize)
    cfg = hf_config(state, "qwen3moe")
    refuse_inexpressible(cfg)
    ne, k, ie = moe_sizes(cfg)
    c = checked_config({**cfg, "intermediate_size": ne * ie})
    require_geometry(c, ie, q, plan.layout)
    flags = file_flags(q, plan.layout) | int(VQFFlag.MOE)
    mode = plan.quantizer
    d, hd, nl, V = c.hidden_size, c.head_dim, c.num_hidden_layers, c.vocab_size
    projection_set = "q4" if q == QType.Q4_0 else "q8"
    tile = backend.vqf_codecs

    def embedding() -> Iterator[bytes]:
        f16 = backend.vqf_codecs.codec("f16")
        for chunk in row_chunks(state, EMBED, (V, d)):
            yield f16.encode(chunk, len(chunk), d, mode="trunc_ftz")

    def floats(names: list[str], shape: tuple[int, ...]) -> Iterator[bytes]:
        for name in names:
            if name not in state:
                raise NotFoundError("vqf.import.missing_tensor", f"{name} is missing", path=name)
            yield np.ascontiguousarray(state[name], dtype=np.float32).reshape(shape).tobytes()

    def router() -> Iterator[bytes]:
        from gguf.quants import dequantize

        for i in range(nl):
            t = gguf_tensor(state, f"blk.{i}.ffn_gate_inp.weight")
            values = dequantize(np.asarray(t.data), t.tensor_type)
            yield np.ascontiguousarray(values, dtype=np.float32).reshape(ne, d).tobytes()

    def matrix(name: str, source: str, shape: tuple[int, int]) -> bytes:
        copied = copy_blocks(state.blocks, q, flags, name, source, shape, backend)
        if copied is not None:
            return copied
        return encode(q, flags, name, state[source], backend, mode)

    def attention(name: str, field: str, shape: tuple[int, int]) -> Iterator[bytes]:
        for i in range(nl):
            yield matrix(name, layer_tensor(i, field), shape)

    def experts(name: str, role: str) -> Iterator[bytes]:
        shape = (d, ie) if role == "down" else (ie, d)
        layout = codec_for(q, flags, name, shape=shape)
        codec = tile.codec(layout)
        for i in range(nl):
            t = gguf_tensor(state, f"blk.{i}.ffn_{role}_exps.weight")
            parts = []
            for x in range(ne):
                raw = expert_blocks(state, t, CODECS[layout].base, x)
                if raw is None:
                    parts.append(encode(q, flags, name, expert_values(state, t, x), backend, mode))
                elif layout != CODECS[layout].base:
                    parts.append(codec.tile(raw, *shape))
                else:
                    parts.append(raw)
            yield join_col_bands(layout, parts, d, ie) if role == "down" else b"".join(parts)

    def lm_head() -> Iterator[bytes]:
        yield matrix(f"{projection_set}_lm", LM_HEAD if LM_HEAD in state else EMBED, (V, d))

    tensors = [
        TensorSource("token_embed", QType.F16, V, d, embedding()),
        TensorSource("final_norm", QType.F32, d, 1, floats([FINAL_NORM], (d,))),
    ]
    for field in ("attn_norm", "ffn_norm", "q_norm", "k_norm"):
        n = hd if field in ("q_norm", "k_norm") else d
        names = [layer_tensor(i, field) for i in range(nl)]
        tensors.append(TensorSource(field, QType.F32, nl * n, 1, floats(names, (n,))))
    tensors.append(TensorSource("moe_router", QType.F32, nl * ne, d, router()))
    shapes = {"q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
              "o_proj": (d, c.q_dim)}  # fmt: skip
    for field, (rows, cols) in shapes.items():
        name = f"{projection_set}_{VQF_PROJECTIONS[field]}"
        tensors.append(TensorSource(name, q, nl * cols, rows, attention(name, field, (rows, cols))))
    ff = ne * ie
    for role in ("gate", "up"):
        name = f"{projection_set}_{role}"
        tensors.append(TensorSource(name, q, nl * ff, d, experts(name, role)))
    down = f"{projection_set}_down"
    tensors.append(TensorSource(down, q, nl * d, ff, experts(down, "down")))
    tensors.append(TensorSource(f"{projection_set}_lm", q, V, d, lm_head()))
    if progress is not None:
        tensors = with_progress(tensors, progress)
    arch = {**arch_from_config(cfg, c), "n_experts": ne, "moe_ffn": ie, "top_k": k}
    if passphrase is None and sign_key is None:
        path = write_vqf(out, arch=arch, tensors=tensors, flags=flags, overwrite=overwrite)
    else:
        path = publish_protected(out, arch, tensors, flags, overwrite, passphrase, sign_key)
    write_gguf_sidecars(metadata(state.reader), path)  # the GGUF's tokenizer, as a VQF's
    return path


__all__ = ["import_gguf_moe"]
