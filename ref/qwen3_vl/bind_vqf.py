"""Bind a VISION VQF file to the Qwen3-VL model: the text tower as ref/qwen3 binds it, plus the
27 vision tensors of spec/vqf.md §vision-tensors with shapes from the arch fields of spec/vqf.md
§arch-semantics.

Rule ids raised here: `vqf.bind.vision_arch` (arch fields that describe no tower),
`vqf.bind.vision_padding` (a padded fc2 column that is not zero), and the shared `vqf.bind.*`
rows (missing tensor, qtype, size) of spec/vqf/rules.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3.bind_vqf import (
    MatrixWords,
    bind_vqf,
    codec_matrix_words,
    read_matrices,
    read_norm,
    require_entry,
)
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.weights import ModelWeights
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.vqf.qtypes import QType

from .config import MergerWeights, SpecialIds, VisionBlockWeights, VisionConfig, VisionWeights

QBLOCK = 32


def _round_up(n: int, k: int) -> int:
    return (n + k - 1) // k * k


def vision_config_from_arch(arch: dict, text_width: int) -> VisionConfig:
    """spec/vqf.md §arch-semantics vision fields -> VisionConfig; `vqf.bind.vision_arch` when they
    describe no tower the binder can build."""
    if not arch.get("vis_depth"):
        raise UnsupportedError(
            "vqf.bind.unsupported", "the file has no vision tower (vis_depth 0)", path="arch"
        )
    ds = arch["vis_ds_count"]
    problems = []
    if arch["vis_out_dim"] != text_width:
        problems.append(f"vis_out_dim {arch['vis_out_dim']} != dim {text_width}")
    if arch["vis_hidden"] % QBLOCK:
        problems.append(f"vis_hidden {arch['vis_hidden']} is not a multiple of 32")
    if not 0 <= ds <= 4:
        problems.append(f"vis_ds_count {ds} outside 0..4")
    if arch["vis_merge"] < 1 or arch["vis_patch"] < 1 or arch["vis_temporal"] < 1:
        problems.append("vis_merge, vis_patch and vis_temporal must be >= 1")
    if arch["vis_ffn"] < 1:
        problems.append("vis_ffn is 0")
    if not problems:
        try:
            return VisionConfig(
                depth=arch["vis_depth"],
                hidden_size=arch["vis_hidden"],
                num_heads=arch["vis_heads"],
                intermediate_size=arch["vis_ffn"],
                out_hidden_size=arch["vis_out_dim"],
                num_position_embeddings=arch["vis_max_pos"],
                deepstack_visual_indexes=tuple(arch["vis_ds_idx"][:ds]),
                patch_size=arch["vis_patch"],
                temporal_patch_size=arch["vis_temporal"],
                spatial_merge_size=arch["vis_merge"],
                eps=float(np.float32(arch["norm_eps"])),
            )
        except (ValueError, ZeroDivisionError) as exc:
            problems.append(str(exc))
    raise InvalidError("vqf.bind.vision_arch", "; ".join(problems), path="arch")


def special_ids(arch: dict) -> SpecialIds:
    return SpecialIds(
        vision_start=arch["vision_start_id"],
        vision_end=arch["vision_end_id"],
        image=arch["image_token_id"],
        video=arch["video_token_id"],
    )


def read_vision_q8(
    vqf: VQFFile, name: str, layers: int, out: int, inp: int, words: MatrixWords
) -> list:
    """A `v_q8_*` matrix: Q8_0 legacy only (spec/vqf.md §vision-tensors), stacked per block."""
    e = require_entry(vqf, name)
    if e.qtype != QType.Q8_0:
        raise InvalidError(
            "vqf.bind.qtype",
            f"{name}: qtype {e.qtype}, vision matrices are Q8_0",
            offset=e.entry_offset,
            path=f"directory[{e.index}]",
        )
    return read_matrices(vqf, name, layers, out, inp, words)


def check_fc2_padding(m: QuantMatrix, used: int, layer: int) -> None:
    """spec/vqf.md §vision-tensors: fc2 rows are zero-padded from vf to vfp columns before
    quantising, so the padding codes are 0 (`vqf.bind.vision_padding`)."""
    pad = m.codes[:, used:]
    if pad.size and np.any(pad != 0):
        r, c = (int(v) for v in np.argwhere(pad != 0)[0])
        raise InvalidError(
            "vqf.bind.vision_padding",
            f"v_q8_fc2 block {layer} row {r}: padding column {used + c} has code {pad[r, c]}",
            path="v_q8_fc2",
        )


def _dense(vqf: VQFFile, name: str, layers: int, out: int, inp: int) -> list[DenseMatrix]:
    flat = read_norm(vqf, name, layers, out * inp)
    return [DenseMatrix(np.ascontiguousarray(v.reshape(out, inp))) for v in flat]


def bind_vision(
    vqf: VQFFile, text_width: int, matrix_words: MatrixWords = codec_matrix_words
) -> tuple[VisionConfig, VisionWeights]:
    """The tower's config and weights (spec/vqf.md §vision-tensors names, shapes from spec/vqf.md
    §arch-semantics)."""
    return bind_vision_with(
        vqf,
        text_width,
        q8=lambda name, layers, out, inp: read_vision_q8(vqf, name, layers, out, inp, matrix_words),
        dense=lambda name, layers, out, inp: _dense(vqf, name, layers, out, inp),
        fc2_codes=lambda fc2: fc2,
    )


def bind_vision_with(
    vqf: VQFFile,
    text_width: int,
    q8: Callable[[str, int, int, int], list],
    dense: Callable[[str, int, int, int], list],
    fc2_codes: Callable[[list], list[QuantMatrix]],
) -> tuple[VisionConfig, VisionWeights]:
    """bind_vision with the matrix readers given (`q8` and `dense` take a name, the layer count
    and the [out, inp] shape; `fc2_codes` gives the QuantMatrix per block whose padding is
    checked): the reference's readers above, or fast/qwen3_vl's FastMatrix views, with the same
    checks in the same order."""
    c = vision_config_from_arch(vqf.header.arch, text_width)
    blocks = _vision_blocks(vqf, c, q8, fc2_codes)
    merger = _merger(vqf, c, dense)
    deepstack = _deepstack_mergers(vqf, c, dense)
    vh = c.hidden_size
    pe = dense("v_patch_embed", 1, vh, c.patch_dim)[0]
    weights = VisionWeights(
        patch_embed=pe,
        patch_bias=read_norm(vqf, "v_patch_bias", 1, vh)[0],
        pos_embed=read_norm(vqf, "v_pos_embed", 1, c.num_position_embeddings * vh)[0].reshape(
            c.num_position_embeddings, vh
        ),
        blocks=blocks,
        merger=merger,
        deepstack=deepstack,
    )
    return c, weights


def _vision_blocks(
    vqf: VQFFile,
    c: VisionConfig,
    q8: Callable[[str, int, int, int], list],
    fc2_codes: Callable[[list], list[QuantMatrix]],
) -> tuple[VisionBlockWeights, ...]:
    """The vd blocks (spec/vqf.md §vision-tensors): the four Q8_0 matrices, fc2's zero padding
    checked, then the biases and LayerNorm vectors, one row per block."""
    vd, vh, vf = c.depth, c.hidden_size, c.intermediate_size
    vfp = _round_up(vf, QBLOCK)
    qkv = q8("v_q8_qkv", vd, 3 * vh, vh)
    proj = q8("v_q8_proj", vd, vh, vh)
    fc1 = q8("v_q8_fc1", vd, vf, vh)
    fc2 = q8("v_q8_fc2", vd, vh, vfp)
    for i, m in enumerate(fc2_codes(fc2)):
        check_fc2_padding(m, vf, i)
    f = {
        n: read_norm(vqf, n, vd, width)
        for n, width in (
            ("v_qkv_bias", 3 * vh), ("v_proj_bias", vh), ("v_norm1_w", vh), ("v_norm1_b", vh),
            ("v_norm2_w", vh), ("v_norm2_b", vh), ("v_fc1_bias", vf), ("v_fc2_bias", vh),
        )
    }  # fmt: skip
    return tuple(
        VisionBlockWeights(
            norm1_w=f["v_norm1_w"][i],
            norm1_b=f["v_norm1_b"][i],
            qkv=qkv[i],
            qkv_b=f["v_qkv_bias"][i],
            proj=proj[i],
            proj_b=f["v_proj_bias"][i],
            norm2_w=f["v_norm2_w"][i],
            norm2_b=f["v_norm2_b"][i],
            fc1=fc1[i],
            fc1_b=f["v_fc1_bias"][i],
            fc2=fc2[i],
            fc2_b=f["v_fc2_bias"][i],
        )
        for i in range(vd)
    )


def _merger(
    vqf: VQFFile, c: VisionConfig, dense: Callable[[str, int, int, int], list]
) -> MergerWeights:
    """The main merger (spec/vqf.md §vision-tensors v_merger_*): its norm is vh wide, before the
    shuffle."""
    vh, vo, mi = c.hidden_size, c.out_hidden_size, c.merged_dim
    return MergerWeights(
        norm_w=read_norm(vqf, "v_merger_nw", 1, vh)[0],
        norm_b=read_norm(vqf, "v_merger_nb", 1, vh)[0],
        fc1=dense("v_merger_f1w", 1, mi, mi)[0],
        fc1_b=read_norm(vqf, "v_merger_f1b", 1, mi)[0],
        fc2=dense("v_merger_f2w", 1, vo, mi)[0],
        fc2_b=read_norm(vqf, "v_merger_f2b", 1, vo)[0],
    )


def _deepstack_mergers(
    vqf: VQFFile, c: VisionConfig, dense: Callable[[str, int, int, int], list]
) -> tuple[MergerWeights, ...]:
    """The ds deepstack mergers (spec/vqf.md §vision-tensors v_ds_*): norms mi wide, after the
    shuffle."""
    vo, mi, ds = c.out_hidden_size, c.merged_dim, len(c.deepstack_visual_indexes)
    if not ds:  # the v_ds_* tensors hold ds rows; with ds = 0 they are empty
        return ()
    nw, nb = read_norm(vqf, "v_ds_nw", ds, mi), read_norm(vqf, "v_ds_nb", ds, mi)
    f1w, f1b = dense("v_ds_f1w", ds, mi, mi), read_norm(vqf, "v_ds_f1b", ds, mi)
    f2w, f2b = dense("v_ds_f2w", ds, vo, mi), read_norm(vqf, "v_ds_f2b", ds, vo)
    return tuple(MergerWeights(nw[j], nb[j], f1w[j], f1b[j], f2w[j], f2b[j]) for j in range(ds))


def bind_vl_vqf(
    vqf: VQFFile,
    matrix_words: MatrixWords = codec_matrix_words,
    projection_set: str | None = None,
) -> tuple[Qwen3Config, ModelWeights, VisionConfig, VisionWeights, SpecialIds]:
    """Text tower, vision tower and special ids of a Qwen3-VL VQF file."""
    tc, tw = bind_vqf(vqf, matrix_words, projection_set)
    vc, vw = bind_vision(vqf, tc.hidden_size, matrix_words)
    return tc, tw, vc, vw, special_ids(vqf.header.arch)


def bind_family(vqf: VQFFile, matrix_words: MatrixWords = codec_matrix_words, projection_set=None):
    """The registry's `binder` entry (weightfile/families/registry.py):
    (VLConfig, (text, vision))."""
    from .model import VLConfig

    tc, tw, vc, vw, ids = bind_vl_vqf(vqf, matrix_words, projection_set)
    return VLConfig(tc, vc, ids), (tw, vw)
