"""Bind a VISION VQF file to the fast Qwen3-VL model (spec/vqf.md §7.4, §8): the text tower as
fast/qwen3 binds it, the vision matrices as FastMatrix views of the mapped payload.

The checks and errors are ref/qwen3_vl/bind_vqf.py's, in its order (its helpers are reused):
the arch fields, each tensor's presence, qtype and size, and the zero fc2 padding, which is
checked on the reference's decoding of v_q8_fc2 alone.
"""

from __future__ import annotations

from weightfile.fast.numerics.matrix import FastMatrix, matrix_from_entry
from weightfile.fast.qwen3.bind import bind as bind_text
from weightfile.ref.qwen3.bind_vqf import (
    codec_matrix_words,
    read_norm,
    require_entry,
    require_layout,
)
from weightfile.ref.qwen3_vl.bind_vqf import (
    QBLOCK,
    check_fc2_padding,
    read_vision_q8,
    special_ids,
    vision_config_from_arch,
)
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import InvalidError
from weightfile.spec.numerics.profile import QuantizedMatmul
from weightfile.spec.vqf.qtypes import QType


def _q8(vqf: VQFFile, name: str, layers: int, out: int, inp: int, mode) -> list[FastMatrix]:
    """A `v_q8_*` matrix per block: Q8_0 only (read_vision_q8's rule), then read_matrices'."""
    e = require_entry(vqf, name)
    if e.qtype != QType.Q8_0:
        raise InvalidError(
            "vqf.bind.qtype",
            f"{name}: qtype {e.qtype}, vision matrices are Q8_0",
            offset=e.entry_offset,
            path=f"directory[{e.index}]",
        )
    require_layout(e, (QType.Q8_0,), layers * out * inp)
    return [matrix_from_entry(vqf, e, out, inp, layer=i, mode=mode) for i in range(layers)]


def _dense(vqf: VQFFile, name: str, layers: int, out: int, inp: int) -> list[FastMatrix]:
    """An F32 matrix per layer (read_norm's checks: F32, size), for the spec/numerics.md §3.4
    dot."""
    read_norm(vqf, name, layers, out * inp)
    e = require_entry(vqf, name)
    return [matrix_from_entry(vqf, e, out, inp, layer=i) for i in range(layers)]


def bind_vision(
    vqf: VQFFile, text_width: int, mode: QuantizedMatmul
) -> tuple[VisionConfig, VisionWeights]:
    """The tower's config and weights, FastMatrix for every matrix."""
    c = vision_config_from_arch(vqf.header.arch, text_width)
    vd, vh, vf, vo = c.depth, c.hidden_size, c.intermediate_size, c.out_hidden_size
    vfp, mi = (vf + QBLOCK - 1) // QBLOCK * QBLOCK, c.merged_dim
    ds = len(c.deepstack_visual_indexes)
    qkv = _q8(vqf, "v_q8_qkv", vd, 3 * vh, vh, mode)
    proj = _q8(vqf, "v_q8_proj", vd, vh, vh, mode)
    fc1 = _q8(vqf, "v_q8_fc1", vd, vf, vh, mode)
    fc2 = _q8(vqf, "v_q8_fc2", vd, vh, vfp, mode)
    for i, m in enumerate(read_vision_q8(vqf, "v_q8_fc2", vd, vh, vfp, codec_matrix_words)):
        check_fc2_padding(m, vf, i)
    f = {
        n: read_norm(vqf, n, vd, width)
        for n, width in (
            ("v_qkv_bias", 3 * vh), ("v_proj_bias", vh), ("v_norm1_w", vh), ("v_norm1_b", vh),
            ("v_norm2_w", vh), ("v_norm2_b", vh), ("v_fc1_bias", vf), ("v_fc2_bias", vh),
        )
    }  # fmt: skip
    mats = {"qkv": qkv, "proj": proj, "fc1": fc1, "fc2": fc2}
    vecs = {
        "norm1_w": "v_norm1_w", "norm1_b": "v_norm1_b", "qkv_b": "v_qkv_bias",
        "proj_b": "v_proj_bias", "norm2_w": "v_norm2_w", "norm2_b": "v_norm2_b",
        "fc1_b": "v_fc1_bias", "fc2_b": "v_fc2_bias",
    }  # fmt: skip
    blocks = tuple(
        VisionBlockWeights(
            **{k: m[i] for k, m in mats.items()}, **{k: f[n][i] for k, n in vecs.items()}
        )
        for i in range(vd)
    )
    merger = MergerWeights(
        norm_w=read_norm(vqf, "v_merger_nw", 1, vh)[0],
        norm_b=read_norm(vqf, "v_merger_nb", 1, vh)[0],
        fc1=_dense(vqf, "v_merger_f1w", 1, mi, mi)[0],
        fc1_b=read_norm(vqf, "v_merger_f1b", 1, mi)[0],
        fc2=_dense(vqf, "v_merger_f2w", 1, vo, mi)[0],
        fc2_b=read_norm(vqf, "v_merger_f2b", 1, vo)[0],
    )
    deepstack: tuple[MergerWeights, ...] = ()
    if ds:  # with ds = 0 the v_ds_* tensors are empty (spec/vqf.md §7.4)
        nw, nb = read_norm(vqf, "v_ds_nw", ds, mi), read_norm(vqf, "v_ds_nb", ds, mi)
        f1w, f1b = _dense(vqf, "v_ds_f1w", ds, mi, mi), read_norm(vqf, "v_ds_f1b", ds, mi)
        f2w, f2b = _dense(vqf, "v_ds_f2w", ds, vo, mi), read_norm(vqf, "v_ds_f2b", ds, vo)
        deepstack = tuple(
            MergerWeights(nw[j], nb[j], f1w[j], f1b[j], f2w[j], f2b[j]) for j in range(ds)
        )
    pe = _dense(vqf, "v_patch_embed", 1, vh, c.patch_dim)[0]
    table = read_norm(vqf, "v_pos_embed", 1, c.num_position_embeddings * vh)[0]
    weights = VisionWeights(
        patch_embed=pe,
        patch_bias=read_norm(vqf, "v_patch_bias", 1, vh)[0],
        pos_embed=table.reshape(c.num_position_embeddings, vh),
        blocks=blocks,
        merger=merger,
        deepstack=deepstack,
    )
    return c, weights


def bind_vl(vqf: VQFFile, mode: QuantizedMatmul, family: str | None = None):
    """(text config, text FastWeights, vision config, vision weights, special ids)."""
    tc, tw = bind_text(vqf, mode, family)
    vc, vw = bind_vision(vqf, tc.hidden_size, mode)
    return tc, tw, vc, vw, special_ids(vqf.header.arch)
