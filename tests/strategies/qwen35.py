"""Tiny Qwen3.5 text configs and random canonical weights for the reference tests.

`tiny_config_json` is a closed spec/ninfer3.md §qwen35-config config with both layer types;
`random_parameters` draws every spec/ninfer3.md §qwen35-names parameter (seeded) with norms and
gates perturbed away from their neutral values, so a missed 1 + w or a swapped gate shows up in the
logits.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.families.qwen35.mtp_files import bind_mtp
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.spec.ninfer3.mtp_names import mtp_parameters
from weightfile.spec.ninfer3.text_names import fusion_groups, text_parameters
from weightfile.spec.ninfer3.vision_names import qkv_groups, vision_parameters

TINY: dict[str, Any] = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "hidden_size": 32,
    "vocab_size": 96,
    "num_hidden_layers": 3,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6,
    "layer_types": ["linear_attention", "full_attention", "linear_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_parameters": {
        "rope_theta": 10000000,
        "partial_rotary_factor": 0.5,
        "mrope_section": [2, 1, 1],
    },
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 8,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
    "intermediate_size": 48,
}

MOE_KEYS: dict[str, Any] = {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "model_type": "qwen3_5_moe_text",
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24,
}


def tiny_config_json(moe: bool = False) -> dict[str, Any]:
    """A deep copy of the tiny dense (or MoE) config."""
    doc = copy.deepcopy(TINY)
    if moe:
        del doc["intermediate_size"]
        doc |= MOE_KEYS
    return doc


def tiny_config(moe: bool = False) -> Qwen35Config:
    return validate_text_config(tiny_config_json(moe))


def random_parameters(config: Qwen35Config, seed: int) -> dict[str, np.ndarray]:
    """Every canonical parameter: N(0, 0.2) matrices, norms around 0 (zero-centred) or 1 (GDN
    norm), A_log in log([1, 8]), dt_bias around 1."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in text_parameters(config.json):
        v = rng.normal(0.0, 0.2, p.shape)
        if p.name.endswith("gdn/norm"):
            v = 1.0 + v
        elif p.name.endswith("gdn/a_log"):
            v = np.log(rng.uniform(1.0, 8.0, p.shape))
        elif p.name.endswith("gdn/dt_bias"):
            v = 1.0 + v
        elif p.name.endswith("token_embedding"):
            v = rng.normal(0.0, 1.0, p.shape)
        out[p.name] = v.astype(np.float32)
    return out


def bf16_round(a: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bf16 (ties to even), returned as float32."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


# -- .ninfer files of a text model, built with the reference writer ------------------------------

RESOURCES = {
    "tokenizer.json": b'{"model": {}}',
    "tokenizer_config.json": b"{}",
    "chat_template.jinja": b"{{ messages }}",
    "generation_config.json": b'{"eos_token_id": 1}',
}


@dataclass
class TextFile:
    """The directory pieces of a text model file; tests edit them before `write`."""

    config: dict[str, Any]
    objects: list[Any] = field(default_factory=list)
    data: dict[str, bytes] = field(default_factory=dict)
    bindings: dict[str, Any] = field(default_factory=dict)
    uses: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, str] = field(default_factory=dict)
    #: components beside text (vision: `add_vision`, mtp: `add_mtp`)
    others: dict[str, Any] = field(default_factory=dict)
    #: the text component's proposal record (`add_proposal`)
    proposal: dict[str, Any] | None = None

    def add_tensor(self, object_id: str, values: np.ndarray, fmt: str, layout: str) -> None:
        shape = tuple(int(d) for d in values.shape)
        self.objects.append(TensorSpec(object_id, shape, fmt, layout))
        self.data[object_id] = get_codec(fmt, layout).encode(values.astype(np.float32), shape)

    def write(self, path: Path) -> Path:
        (entry,) = write_artifact(
            path,
            self.data,
            objects=self.objects,
            components={
                "text": {"config": self.config, "resources": self.resources}
                | ({} if self.proposal is None else {"proposal": self.proposal}),
                **self.others,
            },
            bindings=self.bindings,
            uses=self.uses,
        )
        return entry


def matrix_layout(fmt: str) -> str:
    return "contiguous_le_v1" if fmt in ("bf16", "fp32") else "row_split_k128_v1"


def text_file(config: Qwen35Config, params: dict[str, np.ndarray], matrix_format: str) -> TextFile:
    """Every parameter bound as the converter would: the first fusion group of each kind in one
    parent (rows concatenated, parts bindings), the rest whole objects; direct parameters bf16
    (fp32 for a_log / dt_bias); one A16Only Use per declared input; the four resources."""
    tf = TextFile(copy.deepcopy(config.json))
    for role, blob in RESOURCES.items():
        tf.resources[role] = f"r.{role}"
        tf.objects.append(ResourceSpec(f"r.{role}", len(blob)))
        tf.data[f"r.{role}"] = blob
    specs = {p.name: p for p in text_parameters(config.json)}
    fused: dict[str, tuple[str, int]] = {}  # parameter -> (parent id, first element)
    for layer in range(config.num_hidden_layers):
        for g, group in enumerate(fusion_groups(config.json, layer)):
            if any(name in fused for name in group):
                continue  # a fallback ({Q,K}, {gate,V}, ...) of a group already fused
            parent = f"w.fused.{layer}.{g}"
            rows = np.concatenate([params[n] for n in group])
            tf.add_tensor(parent, rows, matrix_format, matrix_layout(matrix_format))
            at = 0
            for name in group:
                fused[name] = (parent, at)
                at += params[name].size
    for name, p in specs.items():
        if name in fused:
            parent, begin = fused[name]
            part = {"object": parent, "range": [begin, begin + params[name].size]}
            tf.bindings[name] = {"parts": [part]}
        else:
            fmt = p.direct_format or matrix_format
            tf.add_tensor(f"w.{name}", params[name], fmt, matrix_layout(fmt))
            tf.bindings[name] = {"object": f"w.{name}"}
        for consumed in p.inputs:
            tf.uses.append({"parameter": name, "input": consumed, "activation_policy": "A16Only"})
    return tf


# -- the vision component (spec/ninfer3.md §qwen35-vision-names) -------------------------------

TINY_VISION: dict[str, Any] = {
    "model_type": "qwen3_5_vision",
    "depth": 2,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_heads": 2,
    "patch_size": 2,
    "temporal_patch_size": 2,
    "spatial_merge_size": 2,
    "num_position_embeddings": 9,
}
#: the image tokens, after the tiny vocabulary's first ids
VISION_IDS = {
    "<|vision_start|>": 90,
    "<|vision_end|>": 91,
    "<|image_pad|>": 92,
    "<|video_pad|>": 93,
}
TOKENIZER_WITH_IMAGES = json.dumps(
    {"model": {}, "added_tokens": [{"id": i, "content": t} for t, i in VISION_IDS.items()]}
).encode()
VISION_RESOURCES = {
    "preprocessor_config.json": b'{"patch_size": 2}',
    "video_preprocessor_config.json": b'{"patch_size": 2}',
}


def random_vision_parameters(
    vision: dict[str, Any], text_hidden: int, seed: int
) -> dict[str, np.ndarray]:
    """Every vision parameter: N(0, 0.3) matrices and biases, LayerNorm weights around 1."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in vision_parameters(vision, text_hidden):
        v = rng.normal(0.0, 0.3, p.shape)
        if p.name.endswith(("norm1_weight", "norm2_weight", "norm_weight")):
            v = 1.0 + v
        out[p.name] = v.astype(np.float32)
    return out


def add_vision(
    tf: TextFile,
    vision: dict[str, Any],
    params: dict[str, np.ndarray],
    matrix_format: str = "bf16",
    poison: bool = False,
) -> None:
    """The vision component as the official converter packs it ({q, k, v} and their biases one
    parent each), its two resources, the tokenizer resource with the image tokens, one A16Only Use
    per declared input. `poison`: every vision tensor's bytes 0xFF (NaN in bf16)."""
    tf.data["r.tokenizer.json"] = TOKENIZER_WITH_IMAGES
    tf.objects[:] = [
        ResourceSpec(o.id, len(TOKENIZER_WITH_IMAGES)) if o.id == "r.tokenizer.json" else o
        for o in tf.objects
    ]
    res = {}
    for role, blob in VISION_RESOURCES.items():
        res[role] = f"r.{role}"
        tf.objects.append(ResourceSpec(f"r.{role}", len(blob)))
        tf.data[f"r.{role}"] = blob
    tf.others["vision"] = {"config": vision, "target": "text", "resources": res}
    text_hidden = tf.config["hidden_size"]
    specs = vision_parameters(vision, text_hidden)
    groups = {n: g for g in qkv_groups(vision) for n in g}
    for p in specs:
        group = groups.get(p.name, (p.name,))
        parent = "v." + "+".join(group)
        if parent not in tf.data:
            fmt = p.direct_format or matrix_format
            tf.add_tensor(parent, np.concatenate([params[n] for n in group]), fmt,
                          matrix_layout(fmt))  # fmt: skip
            if poison:
                tf.data[parent] = b"\xff" * len(tf.data[parent])
        at = sum(params[n].size for n in group[: group.index(p.name)])
        part = {"object": parent, "range": [at, at + params[p.name].size]}
        tf.bindings[p.name] = {"parts": [part]} if len(group) > 1 else {"object": parent}
        for consumed in p.inputs:
            tf.uses.append({"parameter": p.name, "input": consumed, "activation_policy": "A16Only"})


# -- the MTP component and the proposal head (spec/ninfer3.md §qwen35-mtp-names) ----------------


def random_mtp_parameters(config: Qwen35Config, seed: int) -> dict[str, np.ndarray]:
    """Every MTP parameter: N(0, 0.2) matrices, zero-centred norms around 0."""
    rng = np.random.default_rng(seed)
    return {
        p.name: rng.normal(0.0, 0.2, p.shape).astype(np.float32)
        for p in mtp_parameters(config.json)
    }


def add_mtp(tf: TextFile, params: dict[str, np.ndarray], matrix_format: str = "bf16") -> None:
    """The mtp component as the official converter packs it ({query, key, gate, value} one
    parent), one A16Only Use per declared input, and the output head's Use at mtp/final_hidden
    (weightfile/families/qwen35/mtp_files.py)."""

    def tensor(oid: str, values: np.ndarray, fmt: str | None) -> None:
        f = fmt or matrix_format
        tf.add_tensor(oid, values, f, matrix_layout(f))

    tf.others["mtp"] = bind_mtp(tf.config, params, tensor, tf.bindings, tf.uses)


def add_proposal(tf: TextFile, head: np.ndarray, token_ids: np.ndarray | None) -> None:
    """`text.proposal` (indexed with `token_ids`, else full), `proposal/head` bf16 with its Use at
    mtp/final_hidden, `proposal/token_ids` int32."""
    if token_ids is None:
        tf.proposal = {"domain": "full"}
    else:
        tf.proposal = {"domain": "indexed", "rows": int(head.shape[0])}
        ids = np.asarray(token_ids, dtype=np.int32)
        tf.objects.append(TensorSpec("p.ids", ids.shape, "int32", "contiguous_le_v1"))
        tf.data["p.ids"] = get_codec("int32", "contiguous_le_v1").encode(ids, ids.shape)
        tf.bindings["proposal/token_ids"] = {"object": "p.ids"}
    tf.add_tensor("p.head", head, "bf16", "contiguous_le_v1")
    tf.bindings["proposal/head"] = {"object": "p.head"}
    tf.uses.append(
        {"parameter": "proposal/head", "input": "mtp/final_hidden", "activation_policy": "A16Only"}
    )
