"""The vision tower of a VISION VQF file -> llama.cpp's projector GGUF (`clip`, projector type
`qwen3vl_merger`), written with gguf-py's GGUFWriter (spec/vqf.md §mmproj-export).

`weightfile convert vision.vqf text.gguf --mmproj mmproj.gguf` writes the text tower as any dense
file exports (weightfile/convert/vqf_gguf.py) and this file beside it. The v_q8_* block matrices
are plain Q8_0 rows (spec/vqf.md §vision-tensors), the 34-byte block GGUF's Q8_0 is, so each
block's slice is copied as it lies; fc2 is the exception when vis_ffn is not a multiple of 32:
its rows carry zero padding columns that GGUF's Q8_0 cannot drop, so it is written F32 with the
padding cut (every value exact: a binary16 scale times an int8 code fits binary32). The F32
tensors are copied; the patch embedding is split into its two temporal halves. Every tensor's
qtype and size are checked against the arch before a byte is written.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.qwen3.bind_vqf import require_entry, require_layout
from weightfile.ref.qwen3_vl.bind_vqf import vision_config_from_arch
from weightfile.ref.qwen3_vl.config import VisionConfig
from weightfile.ref.staging import check_output, staged_path
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: llama.cpp's clip.projector_type of the Qwen3-VL merger (clip-impl.h at 0c1e570).
PROJECTOR_TYPE = "qwen3vl_merger"

#: Per-block tensors: (GGUF name in v.blk.N, VQF weight, VQF bias, the block's [out, in] dims).
BLOCK_LINEARS = (
    ("attn_qkv", "v_q8_qkv", "v_qkv_bias", lambda c: (3 * c.hidden_size, c.hidden_size)),
    ("attn_out", "v_q8_proj", "v_proj_bias", lambda c: (c.hidden_size, c.hidden_size)),
    ("ffn_up", "v_q8_fc1", "v_fc1_bias", lambda c: (c.intermediate_size, c.hidden_size)),
    ("ffn_down", "v_q8_fc2", "v_fc2_bias", lambda c: (c.hidden_size, c.intermediate_size)),
)
#: The released Qwen3-VL processor's normalisation (spec/models.md §qwen3-vl; the defaults of
#: weightfile/frontend/image.py's ImageSettings): a VQF file does not record it.
IMAGE_MEAN = IMAGE_STD = (0.5, 0.5, 0.5)
BLOCK_NORMS = (("ln1", "v_norm1_w", "v_norm1_b"), ("ln2", "v_norm2_w", "v_norm2_b"))


@dataclass(frozen=True)
class Tensor:
    """One GGUF tensor: name, numpy shape ([rows, bytes per row] for blocks), dtype, the GGML
    block type (None for plain values) and how to make its bytes."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    raw: Any
    make: Callable[[], np.ndarray]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def export_mmproj(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    passphrase: bytes | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> Path:
    """Write the projector GGUF of the VISION VQF file `src` (module docstring), published
    atomically; `progress(name, total)` is told of every tensor written."""
    import gguf

    from weightfile.ref.vqf.read import open_vqf

    out = check_output(out, overwrite, "vqf.writer.destination")
    with open_vqf(src, passphrase=passphrase) as vqf:
        if not vqf.header.flags & VQFFlag.VISION:
            raise UnsupportedError(
                "vqf.import.option",
                f"{Path(src).name} has no vision tower (no VISION flag): --mmproj is for "
                "Qwen3-VL files",
                path="mmproj",
            )
        a = vqf.header.arch
        c = vision_config_from_arch(a, int(a["dim"]))
        require_exportable(c)
        tensors = mmproj_tensors(vqf, c)
        with staged_path(out, overwrite, exists_rule="vqf.writer.destination") as tmp:
            w = gguf.GGUFWriter(tmp, "clip")
            add_mmproj_metadata(w, c)
            for t in tensors:
                w.add_tensor_info(t.name, t.shape, np.dtype(t.dtype), t.nbytes, raw_dtype=t.raw)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_ti_data_to_file()
            for t in tensors:
                w.write_tensor_data(t.make())
                if progress is not None:
                    progress(t.name, len(tensors))
            w.close()
    return out


def require_exportable(c: VisionConfig) -> None:
    """What llama.cpp's qwen3vl graph assumes and the file must then hold (spec/vqf.md
    §mmproj-export): two temporal halves of the patch kernel and a square position table."""
    side = math.isqrt(c.num_position_embeddings)
    if c.temporal_patch_size != 2 or side * side != c.num_position_embeddings:
        raise UnsupportedError(
            "vqf.import.source",
            f"llama.cpp's qwen3vl projector takes a temporal patch of 2 and a square position "
            f"table; this tower has {c.temporal_patch_size} and {c.num_position_embeddings}",
        )


def add_mmproj_metadata(w: Any, c: VisionConfig) -> None:
    """The clip.* keys llama.cpp's loader reads for a Qwen3-VL projector (spec/vqf.md
    §mmproj-export)."""
    import gguf

    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_name("weightfile export")
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q8_0))
    w.add_clip_has_vision_encoder(True)
    w.add_clip_projector_type(PROJECTOR_TYPE)
    w.add_vision_projection_dim(c.out_hidden_size)
    w.add_vision_image_size(math.isqrt(c.num_position_embeddings) * c.patch_size)
    w.add_vision_patch_size(c.patch_size)
    w.add_vision_embedding_length(c.hidden_size)
    w.add_vision_feed_forward_length(c.intermediate_size)
    w.add_vision_block_count(c.depth)
    w.add_vision_head_count(c.num_heads)
    w.add_vision_image_mean(list(IMAGE_MEAN))
    w.add_vision_image_std(list(IMAGE_STD))
    w.add_vision_use_gelu(True)
    w.add_vision_spatial_merge_size(c.spatial_merge_size)
    w.add_vision_attention_layernorm_eps(c.eps)
    w.add_vision_is_deepstack_layers([i in c.deepstack_visual_indexes for i in range(c.depth)])


def mmproj_tensors(vqf: Any, c: VisionConfig) -> list[Tensor]:
    """Every GGUF tensor of the projector, checked, none made yet (spec/vqf.md §mmproj-export)."""
    d, nl, ps = c.hidden_size, c.depth, c.patch_size
    values = F32Reader(vqf)
    half = 3 * ps * ps
    embed = values("v_patch_embed", 1, d * 3 * 2 * ps * ps)
    tensors = [
        Tensor("v.patch_embd.weight", (d, 3, ps, ps), np.float32, None,
               lambda: embed(0).reshape(d, 3, 2, half // 3)[:, :, 0].reshape(d, 3, ps, ps)),
        Tensor("v.patch_embd.weight.1", (d, 3, ps, ps), np.float32, None,
               lambda: embed(0).reshape(d, 3, 2, half // 3)[:, :, 1].reshape(d, 3, ps, ps)),
        values.tensor("v.patch_embd.bias", "v_patch_bias", 1, (d,)),
        values.tensor("v.position_embd.weight", "v_pos_embed", 1, (c.num_position_embeddings, d)),
    ]  # fmt: skip
    for short, weight, bias, dims in BLOCK_LINEARS:
        out = dims(c)[0]
        tensors += block_matrix(vqf, c, short, weight)
        tensors += [
            values.tensor(f"v.blk.{i}.{short}.bias", bias, nl, (out,), i) for i in range(nl)
        ]
    for short, weight, bias in BLOCK_NORMS:
        for name, suffix in ((weight, "weight"), (bias, "bias")):
            tensors += [values.tensor(f"v.blk.{i}.{short}.{suffix}", name, nl, (d,), i)
                        for i in range(nl)]  # fmt: skip
    tensors += merger_tensors(values, c)
    return tensors


def merger_tensors(values: F32Reader, c: VisionConfig) -> list[Tensor]:
    """The main merger as v.post_ln + mm.0 / mm.2, each DeepStack merger as v.deepstack.N.*, N
    the ViT block it reads (spec/vqf.md §mmproj-export)."""
    d, mi, vo, ds = c.hidden_size, c.merged_dim, c.out_hidden_size, len(c.deepstack_visual_indexes)
    out = [
        values.tensor("v.post_ln.weight", "v_merger_nw", 1, (d,)),
        values.tensor("v.post_ln.bias", "v_merger_nb", 1, (d,)),
        values.tensor("mm.0.weight", "v_merger_f1w", 1, (mi, mi)),
        values.tensor("mm.0.bias", "v_merger_f1b", 1, (mi,)),
        values.tensor("mm.2.weight", "v_merger_f2w", 1, (vo, mi)),
        values.tensor("mm.2.bias", "v_merger_f2b", 1, (vo,)),
    ]
    parts = (("norm.weight", "v_ds_nw", (mi,)), ("norm.bias", "v_ds_nb", (mi,)),
             ("fc1.weight", "v_ds_f1w", (mi, mi)), ("fc1.bias", "v_ds_f1b", (mi,)),
             ("fc2.weight", "v_ds_f2w", (vo, mi)), ("fc2.bias", "v_ds_f2b", (vo,)))  # fmt: skip
    for j, block in enumerate(c.deepstack_visual_indexes):
        out += [values.tensor(f"v.deepstack.{block}.{p}", n, ds, shape, j) for p, n, shape in parts]
    return out


class F32Reader:
    """F32 vision tensors, each checked once (qtype F32, size = layers × length) and read as the
    float32 slice of one layer."""

    def __init__(self, vqf: Any) -> None:
        self.vqf = vqf

    def __call__(self, name: str, layers: int, length: int) -> Callable[[int], np.ndarray]:
        e = require_entry(self.vqf, name)
        require_layout(e, (QType.F32,), layers * length)

        def layer(i: int) -> np.ndarray:
            raw = self.vqf.payload(e)[i * length * 4 : (i + 1) * length * 4]
            return np.frombuffer(bytes(raw), dtype="<f4")

        return layer

    def tensor(
        self, gguf_name: str, name: str, layers: int, shape: tuple[int, ...], i: int = 0
    ) -> Tensor:
        layer = self(name, layers, int(np.prod(shape)))
        return Tensor(gguf_name, shape, np.float32, None, lambda: layer(i).reshape(shape))


def block_matrix(vqf: Any, c: VisionConfig, short: str, name: str) -> list[Tensor]:
    """One v_q8_* matrix per block as `v.blk.N.<short>.weight`: its Q8_0 rows copied, or, for an
    fc2 whose rows are padded past vis_ffn, decoded to F32 with the padding cut."""
    import gguf

    out, inp = next(dims(c) for s, _, _, dims in BLOCK_LINEARS if s == short)
    stored = -(-inp // 32) * 32  # fc2 rows are padded to whole blocks (spec/vqf.md §vision-tensors)
    e = require_entry(vqf, name)
    require_layout(e, (QType.Q8_0,), c.depth * out * stored)
    row = stored // 32 * 34
    step = out * row

    def blocks(i: int) -> np.ndarray:
        return np.frombuffer(bytes(vqf.payload(e)[i * step : (i + 1) * step]), np.uint8)

    def decoded(i: int) -> np.ndarray:
        b = blocks(i).reshape(out, stored // 32, 34)
        scale = b[:, :, :2].copy().view("<f2").astype(np.float32)
        codes = b[:, :, 2:].copy().view(np.int8).astype(np.float32)
        return (scale * codes).reshape(out, stored)[:, :inp].copy()

    prefix = "v.blk."
    if stored == inp:
        q8 = gguf.GGMLQuantizationType.Q8_0
        return [Tensor(f"{prefix}{i}.{short}.weight", (out, row), np.uint8, q8,
                       lambda i=i: blocks(i).reshape(out, row))
                for i in range(c.depth)]  # fmt: skip
    return [Tensor(f"{prefix}{i}.{short}.weight", (out, inp), np.float32, None,
                   lambda i=i: decoded(i)) for i in range(c.depth)]  # fmt: skip
