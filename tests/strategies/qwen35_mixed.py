"""Random tiny Qwen3.5 `.ninfer` files with a matrix format per object, for the fast-vs-ref
properties (spec/ninfer3.md §qwen35-names, §binding, §formats).

`qwen35_files` draws: dense or MoE, the layer-type pattern, every projection object's format
(bf16, fp32, q4/q5/q6/q8 row split, t2 row split from drawn codes, fp8 row scale: mixed per
parameter as the official recipes write them), whether the fusion groups share one parent bound
by parts, one volume or several (a small volume limit), and hard values: subnormal or huge
embeddings, router rows tied exactly, extreme GDN gates, norms that zero a vector; and an nvfp4
output head (hidden 64, vocab 128), which the fast binder decodes to float32 rows.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from strategies.qwen35 import RESOURCES, TextFile, random_parameters, tiny_config_json
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.spec.codecs.ninfer3.layouts import ROW_SPLIT_GEOMETRY
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.text_names import fusion_groups, text_parameters

#: (format, layout) of a projection object.
MATRIX_FORMATS = (
    ("bf16", "contiguous_le_v1"),
    ("fp32", "contiguous_le_v1"),
    ("q4_g64_fp16", "row_split_k128_v1"),
    ("q5_g64_fp16", "row_split_k128_v1"),
    ("q6_g64_fp16", "row_split_k128_v1"),
    ("q8_g32_fp16", "row_split_k128_v1"),
    ("t2_g128_fp16", "row_split_k128_v1"),
    ("fp8_e4m3fn_row_bf16", "row_scale_v1"),
)
HARD = ("tiny_embedding", "huge_embedding", "router_tie", "gate_extremes", "zero_norm")
LAYER_PATTERNS = (
    ["linear_attention", "full_attention", "linear_attention"],
    ["full_attention", "linear_attention"],
    ["linear_attention"],
    ["full_attention"],
)


@dataclass(frozen=True)
class Qwen35Spec:
    """One drawn file: config, parameters, a format per object, fused or not, volume limit."""

    config: Qwen35Config
    params: dict[str, np.ndarray]
    formats: tuple[tuple[str, str], ...]  # drawn in object order, reused cyclically
    fused: bool
    limit: int | None
    hard: tuple[str, ...]
    nvfp4_head: bool = False  # the output head in nvfp4 (hidden 64, vocab 128: its tile sizes)


def t2_payload(values: np.ndarray, shape: tuple[int, int]) -> bytes:
    """t2 has no encoder: codes sign(v) where |v| is above the group's mean magnitude, the scale
    that mean as an f16 word (spec/ninfer3.md §grouped-formats)."""
    g = ROW_SPLIT_GEOMETRY["t2_g128_fp16"].group_size
    n, k = shape
    groups = -(-k // g)
    pad = np.zeros((n, groups * g), np.float32)
    pad[:, :k] = values
    mean = np.abs(pad).reshape(n, groups, g).mean(axis=2).astype(np.float16)
    codes = np.where(np.abs(values) > np.repeat(mean, g, axis=1)[:, :k], np.sign(values), 0)
    words = {"codes": codes.astype(np.int8), "scales": mean.view(np.uint16)}
    return get_codec("t2_g128_fp16", "row_split_k128_v1").encode_words(words, shape)


def nvfp4_payload(values: np.ndarray, shape: tuple[int, int]) -> bytes:
    """nvfp4 has no encoder: e2m1 codes and e4m3fn block scales drawn from the values' seed-like
    bits (spec/ninfer3.md §nvfp4), divisor 1.0."""
    rng = np.random.default_rng(int(values.view(np.uint32).sum()) % 2**32)
    n, k = shape
    words = {
        "codes": rng.integers(0, 16, (n, k)).astype(np.uint8),
        "scales": rng.integers(0x28, 0x40, (n, k // 16)).astype(np.uint8),
        "divisor": np.uint32(0x3F800000),
    }
    return get_codec("nvfp4", "block_scale_k16_m128x4_v1").encode_words(words, shape)


def add_matrix(tf: TextFile, object_id: str, values: np.ndarray, fmt: tuple[str, str]) -> None:
    shape = tuple(int(d) for d in values.shape)
    tf.objects.append(TensorSpec(object_id, shape, *fmt))
    if fmt[0] == "t2_g128_fp16":
        tf.data[object_id] = t2_payload(values.astype(np.float32), shape)
    elif fmt[0] == "nvfp4":
        tf.data[object_id] = nvfp4_payload(values.astype(np.float32), shape)
    else:
        tf.data[object_id] = get_codec(*fmt).encode(values.astype(np.float32), shape)


def build(spec: Qwen35Spec) -> TextFile:
    """Every parameter bound as the converter would (fusion-group parents bound by parts when
    `fused`), each projection object in the next drawn format, direct parameters bf16 (fp32 for
    a_log / dt_bias), one A16Only Use per declared input, the four resources."""
    cfg, params = spec.config, spec.params
    tf = TextFile(copy.deepcopy(cfg.json))
    for role, blob in RESOURCES.items():
        tf.resources[role] = f"r.{role}"
        tf.objects.append(ResourceSpec(f"r.{role}", len(blob)))
        tf.data[f"r.{role}"] = blob
    formats = iter(spec.formats * (1 + 400 // len(spec.formats)))
    fused: dict[str, tuple[str, int]] = {}
    for layer in range(cfg.num_hidden_layers) if spec.fused else ():
        for g, group in enumerate(fusion_groups(cfg.json, layer)):
            if any(name in fused for name in group):
                continue
            parent = f"w.fused.{layer}.{g}"
            add_matrix(tf, parent, np.concatenate([params[n] for n in group]), next(formats))
            at = 0
            for name in group:
                fused[name] = (parent, at)
                at += params[name].size
    for p in text_parameters(cfg.json):
        if p.name in fused:
            parent, begin = fused[p.name]
            part = {"object": parent, "range": [begin, begin + params[p.name].size]}
            tf.bindings[p.name] = {"parts": [part]}
        else:
            fmt = (
                next(formats) if p.direct_format is None else (p.direct_format, "contiguous_le_v1")
            )
            if spec.nvfp4_head and p.name == "text/output_head":  # decoded, then an fp32 segment
                fmt = ("nvfp4", "block_scale_k16_m128x4_v1")
            add_matrix(tf, f"w.{p.name}", params[p.name], fmt)
            tf.bindings[p.name] = {"object": f"w.{p.name}"}
        for consumed in p.inputs:
            tf.uses.append({"parameter": p.name, "input": consumed, "activation_policy": "A16Only"})
    return tf


def write_file(spec: Qwen35Spec, path: Path) -> Path:
    """The entry file; with a volume limit the payload spreads over several volumes (the limit
    is raised in steps until the header and the JSON fit in the first)."""
    tf = build(spec)
    limit = spec.limit
    while True:
        extra: dict[str, Any] = {} if limit is None else {"limit": limit}
        try:
            (entry, *_) = write_artifact(
                path,
                tf.data,
                objects=tf.objects,
                components={"text": {"config": tf.config, "resources": tf.resources}},
                bindings=tf.bindings,
                uses=tf.uses,
                **extra,
            )
            return entry
        except InvalidError as exc:
            if exc.rule != "ninfer3.writer.limit" or limit is None:
                raise
            limit *= 2


def harden(params: dict[str, np.ndarray], hard: tuple[str, ...]) -> None:
    """Apply the drawn hard cases to the parameters in place."""
    emb = "text/token_embedding"
    for h in hard:
        if h == "tiny_embedding":  # subnormal activations (bf16 keeps float32's exponent range)
            params[emb] = (params[emb] * np.float32(2.0**-132)).astype(np.float32)
        elif h == "huge_embedding":
            params[emb] = (params[emb] * np.float32(2.0**60)).astype(np.float32)
        for name in params:
            if h == "router_tie" and name.endswith("moe/router"):
                params[name][1] = params[name][0]  # experts 0 and 1 always tie
            elif h == "gate_extremes" and name.endswith(("gdn/a_log", "gdn/dt_bias")):
                params[name] = np.where(np.arange(params[name].size) % 2, 30.0, -30.0).astype(
                    np.float32
                )
            elif h == "zero_norm" and name.endswith("/input_norm"):
                params[name][::2] = -1.0  # zero-centred: the effective weight 1 + w is 0


@st.composite
def qwen35_specs(draw: st.DrawFn) -> Qwen35Spec:
    moe = draw(st.booleans())
    doc = tiny_config_json(moe)
    if moe:  # three or four experts a token: the combine's order then changes the sums' bits
        doc["num_experts_per_tok"] = draw(st.integers(2, 4))
    doc["layer_types"] = draw(st.sampled_from(LAYER_PATTERNS))
    doc["num_hidden_layers"] = len(doc["layer_types"])
    doc["tie_word_embeddings"] = False
    nvfp4_head = draw(st.booleans())
    if nvfp4_head:
        doc["hidden_size"], doc["vocab_size"] = 64, 128
    config = validate_text_config(doc)
    params = random_parameters(config, draw(st.integers(0, 2**16)))
    hard = tuple(draw(st.lists(st.sampled_from(HARD), max_size=2, unique=True)))
    harden(params, hard)
    formats = tuple(draw(st.lists(st.sampled_from(MATRIX_FORMATS), min_size=1, max_size=6)))
    limit = draw(st.sampled_from([None, 16_384]))
    return Qwen35Spec(config, params, formats, draw(st.booleans()), limit, hard, nvfp4_head)
