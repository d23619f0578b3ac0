"""Tiny Qwen3.5 text configs and random canonical weights for the reference tests.

`tiny_config_json` is a closed spec/ninfer3.md §qwen35-config config with both layer types;
`random_parameters` draws every spec/ninfer3.md §qwen35-names parameter (seeded) with norms and
gates perturbed away from their neutral values, so a missed 1 + w or a swapped gate shows up in the
logits.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config
from weightfile.spec.ninfer3.text_names import fusion_groups, text_parameters

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

    def add_tensor(self, object_id: str, values: np.ndarray, fmt: str, layout: str) -> None:
        shape = tuple(int(d) for d in values.shape)
        self.objects.append(TensorSpec(object_id, shape, fmt, layout))
        self.data[object_id] = get_codec(fmt, layout).encode(values.astype(np.float32), shape)

    def write(self, path: Path) -> Path:
        (entry,) = write_artifact(
            path,
            self.data,
            objects=self.objects,
            components={"text": {"config": self.config, "resources": self.resources}},
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
