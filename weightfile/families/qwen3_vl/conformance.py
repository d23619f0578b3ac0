"""`vqf-vl-model` cases: tiny Qwen3-VL VQF files (flag VISION) + images as raw RGB pixels + a prompt
of token ids -> the prepared images, the expanded prompt, its MRoPE positions, greedy tokens,
logits and digests of the vision tower's and the text tower's traced activations, under the
canonical numerics (spec/models.md §qwen3-vl, spec/numerics.md §vision; README "Qwen3-VL model
cases").

A kind of its own, not `vqf-model`: an engine without a vision tower declares `vqf-model` and
skips these. The files are written by the Qwen3-VL importer's own functions (the text tower by
`build_tensors`, the 27 vision tensors by `build_vision_tensors`, spec/vqf.md §vision-tensors) from
seeded transformers-named weights; the geometry is small enough for the reference to answer in
seconds (4-pixel patches, 2 blocks, DeepStack after block 0, fc2 padded from 48 to 64 columns). The
image processor's pixel limits are not in the file, so each case names them (`image_processor`).

The expected answer is the family's reference model (ref/qwen3_vl) through the family registry;
the `fast` adapter answers with the family's fast model when the registry row has one, and with
the reference otherwise (its `kinds` reply says so).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.seeded import uniform, words
from weightfile.families import vqf_family
from weightfile.families.qwen3.conformance import digest
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, layer_tensor
from weightfile.families.qwen3.to_vqf import arch_from_config, build_tensors
from weightfile.families.qwen3_vl.hf_names import (
    BLOCK_TENSORS,
    MERGER_TENSORS,
    PATCH_BIAS,
    PATCH_EMBED,
    POS_EMBED,
    block_tensor,
    merger_tensor,
)
from weightfile.families.qwen3_vl.to_vqf import build_vision_tensors, text_config, vision_arch
from weightfile.fast._native import library
from weightfile.fast.backend import FAST
from weightfile.frontend.image import ImageSettings, preprocess, settings_for
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.layers.sampling import greedy
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3.trace import names_for as text_names
from weightfile.ref.qwen3_vl.model import DEEPSTACK_OP, expand_image_tokens, rope_index
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: The tiny Qwen3-VL of every case, as a transformers-style config.json (nested text and vision
#: configs, the special ids at the top level).
VL_HF: dict[str, Any] = {
    "model_type": "qwen3_vl",
    "architectures": ["Qwen3VLForConditionalGeneration"],
    "tie_word_embeddings": True,
    "vision_start_token_id": 60, "vision_end_token_id": 61, "image_token_id": 62,
    "video_token_id": 63,
    "text_config": dict(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, rope_theta=10000.0,
        rms_norm_eps=1e-6, bos_token_id=0, eos_token_id=1,
        rope_parameters={"rope_type": "default", "mrope_section": [4, 2, 2],
                         "mrope_interleaved": True},
    ),
    "vision_config": dict(
        depth=2, hidden_size=32, num_heads=2, intermediate_size=48, patch_size=4,
        temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=32, in_channels=3,
        num_position_embeddings=64, deepstack_visual_indexes=[0],
        hidden_act="gelu_pytorch_tanh",
    ),
}  # fmt: skip
#: Why engine `fast` answers `vqf-vl-model` with the reference while the family has no fast
#: model (the built-in adapter's `kinds` notes, said only while the row names none; the row's
#: builder names it).
FAST_VL_MODEL = (
    "the Qwen3-VL family has no fast model yet (weightfile/families/registry.py): the reference "
    "forward pass answers"
)
#: The NumPy codecs encode the files: bytes equal to the reference's (tests/differential), in a
#: fraction of the time.
#: The processor's pixel limits of every case (a 4-pixel patch merges in 8-pixel windows).
MIN_PIXELS = 64
MAX_PIXELS = 1024


@dataclass(frozen=True, slots=True)
class Image:
    """One raw RGB picture of a case: height × width × 3 seeded bytes."""

    height: int
    width: int
    seed: int

    def pixels(self) -> np.ndarray:
        n = self.height * self.width * 3
        top = words(self.seed, n) >> np.uint64(56)  # the top byte of each SplitMix64 word
        return top.astype(np.uint8).reshape(self.height, self.width, 3)


@dataclass(frozen=True, slots=True)
class VLCase:
    name: str
    meaning: str
    qtype: QType
    layout: str  # "legacy" | "tiled" (the text tower; the vision matrices are Q8_0 legacy)
    seed: int
    images: tuple[Image, ...]
    prompt: tuple[int, ...]  # image_token_id (62) stands for the next image
    new_tokens: int
    preprocess: str = "hf"


CASES = (
    VLCase("q8-one-image", "wmode q8 untiled, one 9x17 image (hf: 8x16 pixels, 2x4 patches, 2 "
           "tokens) with text on both sides", QType.Q8_0, "legacy", 31, (Image(9, 17, 311),),
           (5, 60, 62, 61, 17, 33), 3),
    VLCase("q4-two-images", "wmode q4 tiled, two images in one prompt: 7x18 (hf: 8x16 pixels, "
           "2x4 patches, 2 tokens) and 15x17 (hf: 16x16, 4x4 patches, 4 tokens, so the later "
           "positions shift by -2)", QType.Q4_0, "tiled", 32,
           (Image(7, 18, 321), Image(15, 17, 322)), (60, 62, 61, 9, 60, 62, 61, 40), 3),
    VLCase("q8-board-preprocess", "wmode q8 untiled (the q8-one-image file), one 10x19 image by "
           "the board's recipe: nearest-neighbour to 8x16 pixels, 2x4 patches, p/127.5 - 1",
           QType.Q8_0, "legacy", 31, (Image(10, 19, 331),), (60, 62, 61, 7, 8), 3, "board"),
)  # fmt: skip


def text_state_dict(seed: int, c: Any) -> dict[str, np.ndarray]:
    """Seeded text weights in Qwen3 transformers names, as the model cases draw them."""
    d, ffn, q, kv = c.hidden_size, c.intermediate_size, c.q_dim, c.kv_dim
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "q_norm": (c.head_dim,),
              "k_norm": (c.head_dim,), "q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d),
              "o_proj": (d, q), "gate_proj": (ffn, d), "up_proj": (ffn, d),
              "down_proj": (d, ffn)}  # fmt: skip
    base = seed * 1000
    sd = {EMBED: uniform(base, (c.vocab_size, d), 1.75)}
    sd[FINAL_NORM] = uniform(base + 1, d, 0.15) + np.float32(1.0)
    for i in range(c.num_hidden_layers):
        for j, f in enumerate(LAYER_TENSORS):
            at = base + 2 + i * len(LAYER_TENSORS) + j
            scale, offset = (0.15, 1.0) if f.endswith("norm") else (0.5, 0.0)
            sd[layer_tensor(i, f)] = uniform(at, shapes[f], scale) + np.float32(offset)
    return sd


def vision_state_dict(seed: int, arch: dict[str, Any]) -> dict[str, np.ndarray]:
    """Seeded vision weights in transformers names: LayerNorm weights 1 ± 0.15, biases ±0.1,
    matrices ±0.3, the patch and position embeddings ±0.5."""
    vh, vf, vo = arch["vis_hidden"], arch["vis_ffn"], arch["vis_out_dim"]
    mi = vh * arch["vis_merge"] ** 2
    block = {"v_q8_qkv": (3 * vh, vh), "v_q8_proj": (vh, vh), "v_q8_fc1": (vf, vh),
             "v_q8_fc2": (vh, vf), "v_qkv_bias": (3 * vh,), "v_proj_bias": (vh,),
             "v_norm1_w": (vh,), "v_norm1_b": (vh,), "v_norm2_w": (vh,), "v_norm2_b": (vh,),
             "v_fc1_bias": (vf,), "v_fc2_bias": (vh,)}  # fmt: skip
    merger = {"nw": (vh,), "nb": (vh,), "f1w": (mi, mi), "f1b": (mi,), "f2w": (vo, mi),
              "f2b": (vo,)}  # fmt: skip
    at = iter(range(seed * 1000 + 500, seed * 1000 + 1000))

    def draw(name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name.endswith(("norm1_w", "norm2_w", "nw")):
            return uniform(next(at), shape, 0.15) + np.float32(1.0)
        scale = 0.3 if len(shape) == 2 else 0.1
        return uniform(next(at), shape, scale)

    patch = (vh, 3, arch["vis_temporal"], arch["vis_patch"], arch["vis_patch"])
    sd = {PATCH_EMBED: uniform(next(at), patch, 0.5), PATCH_BIAS: uniform(next(at), vh, 0.1),
          POS_EMBED: uniform(next(at), (arch["vis_max_pos"], vh), 0.5)}  # fmt: skip
    for i in range(arch["vis_depth"]):
        for name in BLOCK_TENSORS:
            sd[block_tensor(i, name)] = draw(name, block[name])
    for j in (None, *range(arch["vis_ds_count"])):
        for part in MERGER_TENSORS:
            shape = (mi,) if j is not None and part in ("nw", "nb") else merger[part]
            sd[merger_tensor(part, j)] = draw(part, shape)
    return sd


def write_model(path: Path, case: VLCase) -> Path:
    """The case's file through the importer's own functions (spec/vqf.md §text-tensors,
    §vision-tensors, §arch-semantics)."""
    merged, c = text_config(VL_HF)
    arch = arch_from_config(merged, c) | vision_arch(VL_HF, c)
    flags = file_flags(case.qtype, case.layout) | VQFFlag.VISION
    tensors = build_tensors(text_state_dict(case.seed, c), c, case.qtype, flags, FAST)
    tensors += build_vision_tensors(vision_state_dict(case.seed, arch), arch, FAST)
    return write_vqf(path, arch=arch, tensors=tensors, flags=int(flags))


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def vision_names(vqf: VQFFile) -> list[str]:
    """The digested vision trace names: the patch embedding, every block's output, every
    DeepStack feature and the merger (spec/numerics.md §vision-merge)."""
    a = vqf.header.arch
    return ["vision.patch_embed",
            *(f"vision.blocks.{i}.mlp_residual" for i in range(a["vis_depth"])),
            *(f"vision.deepstack.{j}" for j in range(a["vis_ds_count"])),
            "vision.merger"]  # fmt: skip


def text_trace_names(config: Any, deepstack: int) -> list[str]:
    """spec/models.md §qwen3-forward's names of the text tower, `layers.L.deepstack` after each of
    the first `deepstack` layers' ffn_residual."""
    out = []
    for name in text_names(getattr(config, "text", config)):  # a VLConfig or its text part
        out.append(name)
        layer, _, op = name.removeprefix("layers.").partition(".")
        if name.startswith("layers.") and op == "ffn_residual" and int(layer) < deepstack:
            out.append(f"layers.{layer}.{DEEPSTACK_OP}")
    return out


def vl_answer(
    prepared: list[Any],
    prompt: list[int],
    positions: Any,
    delta: int,
    tokens: list[int],
    rows: list[np.ndarray],
    arrays: dict[str, np.ndarray],
    names: list[str],
) -> dict[str, Any]:
    """The answer of a vision model case (conformance/README.md "Qwen3-VL model cases"), for
    Qwen3-VL over VQF and Qwen3.5 over `.ninfer` alike: images, prompt, positions, tokens,
    every logits row in hex, the named activations' digests."""
    every = np.concatenate(rows)
    return {
        "images": [image_answer(p) for p in prepared],
        "prompt": [str(t) for t in prompt],
        "position_ids": [[str(v) for v in p] for p in positions],
        "rope_delta": str(delta),
        "tokens": [str(t) for t in tokens],
        "logits": {
            "dtype": "float32",
            "shape": [str(n) for n in every.shape],
            "hex": np.ascontiguousarray(every, dtype="<f4").tobytes().hex(),
        },
        "activations": {name: digest(arrays[name]) for name in names},
    }


def image_answer(p: Any) -> dict[str, Any]:
    """One prepared image: its grid, token count and the digest of its pixel_values."""
    return {
        "grid": [str(n) for n in p.grid_thw],
        "tokens": str(p.n_tokens),
        "pixel_values": {
            "dtype": "float32",
            "shape": [str(n) for n in p.pixel_values.shape],
            "sha256": sha256(p.pixel_values.astype("<f4")),
        },
    }


def read_images(folder: Path, case: dict[str, Any]) -> list[np.ndarray]:
    """The case's raw RGB files as uint8 [height, width, 3] arrays."""
    out = []
    for im in case["images"]:
        h, w = int(im["height"]), int(im["width"])
        raw = np.frombuffer((folder / im["file"]).read_bytes(), np.uint8)
        out.append(raw.reshape(h, w, 3))
    return out


def open_engine(backend: Backend, vqf: VQFFile) -> Any:
    """The family's reference model, or its fast model (`fast` with a fast row and C kernels;
    a row without one answers with the reference, as the adapter's `kinds` notes say)."""
    family = vqf_family(vqf)
    if backend is FAST and family.has_fast:
        if library() is None:
            raise RuntimeError("no C kernels")
        return family.fast_model(vqf, threads=1)
    return family.reference_model(vqf)


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The protocol's answer (README "Qwen3-VL model cases")."""
    limits = case["image_processor"]
    with open_vqf(folder / case["model"]) as vqf:
        arch = vqf.header.arch
        pad = arch["image_token_id"]
        base = ImageSettings(
            min_pixels=int(limits["min_pixels"]), max_pixels=int(limits["max_pixels"])
        )
        s = settings_for(arch, base)
        mode = case["image_preprocess"]
        prepared = [preprocess(rgb, s, mode) for rgb in read_images(folder, case)]
        images = [VisionInput(p.pixel_values, p.grid_thw) for p in prepared]
        counts = [p.n_tokens for p in prepared]
        prompt = expand_image_tokens([int(t) for t in case["prompt"]], pad, counts)
        grids = [im.grid_thw for im in images]
        positions, delta = rope_index(prompt, pad, grids, arch["vis_merge"])
        model = open_engine(backend, vqf)
        cache = model.new_cache()
        trace = TraceRecorder()
        model.attach_images(images)
        rows = [np.asarray(model.forward(prompt, cache, trace=trace), dtype=np.float32)]
        tokens: list[int] = []
        new_tokens = int(case["new_tokens"])
        for step in range(new_tokens):
            tokens.append(greedy(list(rows[-1][-1])))
            if step + 1 < new_tokens:
                rows.append(np.asarray(model.forward([tokens[-1]], cache), dtype=np.float32))
        arrays = trace.arrays()
        names = vision_names(vqf) + text_trace_names(model.config, arch["vis_ds_count"])
    return vl_answer(prepared, prompt, positions, delta, tokens, rows, arrays, names)


def case_answer(backend: Backend, folder: Path) -> dict[str, Any]:
    """The built-in adapter's answer to a `vqf-vl-model` case folder: `answer` on its case.json
    (spec/models.md §qwen3-vl; the row's builder names it)."""
    return answer(backend, folder, read_case(folder))


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every Qwen3-VL model case."""
    for case in CASES:
        folder = scratch / case.name
        folder.mkdir()
        path = write_model(folder / "model.vqf", case)
        files = {"model.vqf": path.read_bytes()}
        images = []
        for k, im in enumerate(case.images):
            name = f"image{k}.rgb"
            files[name] = im.pixels().tobytes()
            (folder / name).write_bytes(files[name])
            images.append({"file": name, "height": str(im.height), "width": str(im.width)})
        fields = {"expect": "accept", "model": "model.vqf", "images": images,
                  "image_preprocess": case.preprocess,
                  "image_processor": {"min_pixels": str(MIN_PIXELS),
                                      "max_pixels": str(MAX_PIXELS)},
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "canonical", "description": case.meaning}  # fmt: skip
        want = answer(REFERENCE, folder, fields)
        yield f"{prefix}/vl-model/qwen3_vl/{case.name}", fields, files, want
