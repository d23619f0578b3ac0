"""`ninfer3-vl-model` cases: tiny Qwen3.5 `.ninfer` files with a `vision` component, images as
raw RGB pixels and a prompt -> the prepared images, the expanded prompt, its MRoPE positions and
δ, greedy tokens, logits and the tower's and text's activation digests (conformance/README.md,
"Qwen3.5 vision model cases"; spec/models.md §qwen35-vision, spec/ninfer3.md
§qwen35-vision-names).

The files are the `ninfer3-model` cases' text (conformance_files) plus a seeded vision
component packed as the official converter packs it; the answers come from the reference
binder, tower and forward pass under the canonical numerics. Engine `fast` binds with the fast
codecs and runs the fast tower (fast/qwen3_vl/dense.py) with the reference text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.seeded import uniform
from weightfile.families import ninfer_family
from weightfile.families.qwen3_vl.conformance import read_images, vl_answer
from weightfile.families.qwen35.conformance_files import (
    RESOURCES,
    Layout,
    TextDirectory,
    config_json,
    parameters,
    text_directory,
    word_level_tokenizer,
)
from weightfile.fast._native import library
from weightfile.fast.backend import FAST
from weightfile.frontend.image import ImageSettings, preprocess, settings_for
from weightfile.frontend.ninfer_session import vision_arch
from weightfile.frontend.resources import processor_settings
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.layers.sampling import greedy
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen3_vl.model import expand_image_tokens, rope_index
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionTower
from weightfile.ref.qwen35.vision import check_vision, open_vision
from weightfile.spec.errors import Violation, WeightfileError
from weightfile.spec.ninfer3.vision_names import (
    VISION_RESOURCE_ROLES,
    VISION_TOKENS,
    qkv_groups,
    vision_parameters,
)

MODEL_NAME = "model.ninfer"
FAST_NINFER3_VL_MODEL = (
    "fast codecs bind the weights and the fast vision tower (fast/qwen3_vl/dense.py) encodes the "
    "images; the text forward pass is the reference one"
)
VISION = {
    "model_type": "qwen3_5_vision", "depth": 2, "hidden_size": 16, "intermediate_size": 24,
    "num_heads": 2, "patch_size": 4, "temporal_patch_size": 2, "spatial_merge_size": 2,
    "num_position_embeddings": 9,
}  # fmt: skip
#: The image tokens take the last four ids of the 64-word vocabulary.
TOKEN_IDS = {"vision_start": 60, "vision_end": 61, "image": 62, "video": 63}
MIN_PIXELS, MAX_PIXELS = 64, 1024
PROCESSOR = {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
             "patch_size": 4, "merge_size": 2, "temporal_patch_size": 2}  # fmt: skip


def tokenizer(words: int = 60, ids: dict[str, int] | None = None) -> bytes:
    """WordLevel words t0 … t{words-1} (the model cases': 60) plus the four image tokens as
    added tokens with `ids` (the model cases': `TOKEN_IDS`)."""
    doc = json.loads(word_level_tokenizer(words))
    doc["added_tokens"] = [
        {"id": (ids or TOKEN_IDS)[field], "content": text, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for field, text in VISION_TOKENS.items()
    ]  # fmt: skip
    return json.dumps(doc, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Picture:
    height: int
    width: int
    seed: int

    def pixels(self) -> np.ndarray:
        """uint8 [height, width, 3] from the corpus's value source."""
        u = uniform(self.seed, (self.height, self.width, 3))
        return ((u + np.float32(1)) * np.float32(127.5)).astype(np.uint8)


@dataclass(frozen=True, slots=True)
class VLCase:
    name: str
    meaning: str
    layout: Layout
    vision_format: str
    seed: int
    pictures: tuple[Picture, ...]
    prompt: tuple[int, ...]
    new_tokens: int


CASES = (
    VLCase("bf16-one-image", "bf16 text and vision, one non-square image, text on both sides",
           Layout("bf16"), "bf16", 4, (Picture(12, 28, 71),), (3, 60, 62, 61, 9, 4), 2),
    VLCase("q8-two-images", "text q8_g32_fp16 with q4_g64_fp16 fused parents, vision q8, two "
           "images of different grids in one prompt", Layout("q8_g32_fp16", fused="q4_g64_fp16"),
           "q8_g32_fp16", 5, (Picture(16, 16, 72), Picture(8, 24, 73)),
           (5, 60, 62, 61, 7, 60, 62, 61, 2), 2),
)  # fmt: skip


def vision_values(
    seed: int, text_hidden: int, vision: dict[str, Any] = VISION
) -> dict[str, np.ndarray]:
    """Every vision parameter from its own seed: LayerNorm weights 1 ± 0.2, other direct values
    ±0.2, matrices ±0.35."""
    out = {}
    for i, p in enumerate(vision_parameters(vision, text_hidden)):
        s = seed * 1000 + 500 + i
        if p.name.endswith("norm1_weight") or p.name.endswith(("norm2_weight", "norm_weight")):
            out[p.name] = uniform(s, p.shape, 0.2) + np.float32(1.0)
        else:
            out[p.name] = uniform(s, p.shape, 0.2 if p.direct_format else 0.35)
    return out


def add_vision(
    d: TextDirectory, values: dict[str, np.ndarray], fmt: str, vision: dict[str, Any] = VISION
) -> None:
    """The vision component: {q, k, v} and their biases one parent each, A16Only Uses, its
    two resources."""
    groups = {n: g for g in qkv_groups(vision) for n in g}
    res = {}
    for role in VISION_RESOURCE_ROLES:
        d.resource(role, json.dumps(PROCESSOR).encode())
        res[role] = d.resources.pop(role)
    d.others["vision"] = {"config": dict(vision), "target": "text", "resources": res}
    for p in vision_parameters(vision, d.config["hidden_size"]):
        group = groups.get(p.name, (p.name,))
        parent = "v." + "+".join(group)
        if parent not in d.objects:
            d.tensor(parent, np.concatenate([values[n] for n in group]), p.direct_format or fmt)
        at = sum(values[n].size for n in group[: group.index(p.name)])
        part = {"object": parent, "range": [at, at + values[p.name].size]}
        d.bindings[p.name] = {"parts": [part]} if len(group) > 1 else {"object": parent}
        d.uses += [
            {"parameter": p.name, "input": i, "activation_policy": "A16Only"} for i in p.inputs
        ]


def write_model(path: Path, case: VLCase) -> Path:
    config = config_json()
    resources = {**RESOURCES, "tokenizer.json": tokenizer()}
    d = text_directory(config, parameters(config, case.seed), case.layout, resources)
    add_vision(d, vision_values(case.seed, config["hidden_size"]), case.vision_format)
    entry = d.write(path, label=case.name)
    found = verify(entry)
    if found:
        raise RuntimeError(f"vl case {case.name} is invalid: {[str(v) for v in found]}")
    return entry


def open_engine(backend: Backend, nf: Any) -> Any:
    """The multimodal model: the family's text model, the reference tower, or the fast one
    under `fast` with C kernels."""
    family = ninfer_family(nf)
    codecs = backend.ninfer_codecs.get_codec
    text = family.reference_model(nf, codec_for=codecs)
    binding = check_vision(nf, text.config)
    tower: Any = VisionTower
    if backend is FAST and library() is not None:
        from weightfile.fast.qwen3_vl.dense import fast_tower

        tower = fast_tower
    return family, open_vision(nf, text, binding, tower, codecs), binding


def prepare(nf: Any, binding: Any, case: dict[str, Any], folder: Path) -> list[Any]:
    limits = case["image_processor"]
    base = ImageSettings(min_pixels=int(limits["min_pixels"]), max_pixels=int(limits["max_pixels"]))
    arch = vision_arch(binding.config, binding.ids) | processor_settings(nf)
    s = settings_for(arch, base)
    return [preprocess(rgb, s, "hf") for rgb in read_images(folder, case)]


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The protocol's answer (README "Qwen3.5 vision model cases")."""
    with open_artifact(folder / case["model"]) as nf:
        family, model, binding = open_engine(backend, nf)
        prepared = prepare(nf, binding, case, folder)
    pad, merge = binding.ids.image, binding.config.spatial_merge_size
    prompt = expand_image_tokens(
        [int(t) for t in case["prompt"]], pad, [p.n_tokens for p in prepared]
    )
    positions, delta = rope_index(prompt, pad, [p.grid_thw for p in prepared], merge)
    cache, trace = model.new_cache(), TraceRecorder()
    model.attach_images([VisionInput(p.pixel_values, p.grid_thw) for p in prepared])
    rows = [np.asarray(model.forward(prompt, cache, trace=trace), dtype=np.float32)]
    tokens: list[int] = []
    for step in range(int(case["new_tokens"])):
        tokens.append(greedy(list(rows[-1][-1])))
        if step + 1 < int(case["new_tokens"]):
            rows.append(np.asarray(model.forward([tokens[-1]], cache), dtype=np.float32))
    arrays = trace.arrays()
    names = ["vision.patch_embed",
             *(f"vision.blocks.{i}.mlp_residual" for i in range(binding.config.depth)),
             "vision.merger", *family.trace_names(model.config)]  # fmt: skip
    return vl_answer(prepared, prompt, positions, delta, tokens, rows, arrays, names)


def case_answer(backend: Backend, folder: Path) -> dict[str, Any] | Violation:
    """The built-in adapter's answer to a `ninfer3-vl-model` case folder, or the first rule a
    rejected file breaks (ninfer3 v5; conformance/README.md, "Protocol")."""
    try:
        return answer(backend, folder, read_case(folder))
    except WeightfileError as exc:
        return exc.violation


def image_fields(
    folder: Path, pictures: tuple[Picture, ...], files: dict[str, bytes]
) -> dict[str, Any]:
    """The case.json members before the prompt (expect accept, the model, the images and how
    to prepare them); each picture written into `folder` and added to `files` as raw RGB."""
    images = []
    for k, pic in enumerate(pictures):
        name = f"image{k}.rgb"
        files[name] = pic.pixels().tobytes()
        (folder / name).write_bytes(files[name])
        images.append({"file": name, "height": str(pic.height), "width": str(pic.width)})
    limits = {"min_pixels": str(MIN_PIXELS), "max_pixels": str(MAX_PIXELS)}
    return {"expect": "accept", "model": MODEL_NAME, "images": images,
            "image_preprocess": "hf", "image_processor": limits}  # fmt: skip


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every Qwen3.5 vision model case."""
    for case in CASES:
        folder = scratch / case.name
        folder.mkdir()
        files = {MODEL_NAME: write_model(folder / MODEL_NAME, case).read_bytes()}
        fields = image_fields(folder, case.pictures, files) | {
            "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
            "numerics": "canonical", "description": case.meaning,
        }  # fmt: skip
        want = answer(REFERENCE, folder, fields)
        yield f"{prefix}/vl-model/qwen35/{case.name}", fields, files, want
