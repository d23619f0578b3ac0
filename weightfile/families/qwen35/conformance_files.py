"""Tiny Qwen3.5 text `.ninfer` files for the `ninfer3-model` cases (conformance/README.md,
"Model cases"; spec/ninfer3.md §qwen35-text).

The files are written from seeded canonical parameters (conformance/seeded.py) by the reference
writer — no transformers, no torch — so the generator runs anywhere. A `Layout` says how the
spec/ninfer3.md §qwen35-names parameters become objects: which fusion groups share one parent (bound
by `parts`), and in which format the parents and the other matrices are stored; direct parameters
always take their spec/ninfer3.md §qwen35-names format (bf16, fp32 for a_log / dt_bias) in
`contiguous_le_v1`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance import seeded
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT
from weightfile.spec.ninfer3.text_names import TextParameter, fusion_groups, text_parameters

GDN = "linear_attention"
ATTENTION = "full_attention"


def text_config(
    hidden: int,
    vocab: int,
    layer_types: list[str],
    ffn: dict[str, Any],
    *,
    attention: tuple[int, int, int] = (4, 2, 16),
    mrope: tuple[int, int, int] = (2, 1, 1),
    gdn: tuple[int, int, int, int] = (2, 8, 4, 8),
    tied: bool = False,
) -> dict[str, Any]:
    """A spec/ninfer3.md §qwen35-config closed text config: `attention` is (heads, KV heads,
    head_dim) with partial rotary 0.5 and MRoPE `mrope`; `gdn` is (key heads, key dim, value heads,
    value dim) with conv kernel 4; `ffn` the dense or MoE members (an MoE one carries its
    architecture)."""
    doc: dict[str, Any] = {
        "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
        "hidden_size": hidden, "vocab_size": vocab, "num_hidden_layers": len(layer_types),
        "max_position_embeddings": 256, "tie_word_embeddings": tied, "rms_norm_eps": 1e-6,
        "layer_types": list(layer_types),
    }  # fmt: skip
    if ATTENTION in layer_types:
        heads, kv, head_dim = attention
        doc |= {"num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
                "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.5,
                                    "mrope_section": list(mrope)}}  # fmt: skip
    if GDN in layer_types:
        kh, kd, vh, vd = gdn
        doc |= {"linear_num_key_heads": kh, "linear_key_head_dim": kd,
                "linear_num_value_heads": vh, "linear_value_head_dim": vd,
                "linear_conv_kernel_dim": 4}  # fmt: skip
    return doc | copy.deepcopy(ffn)


def moe_ffn(experts: int, top: int, width: int, shared: int) -> dict[str, Any]:
    """The MoE members (and the MoE architecture / model_type) of a text config."""
    return {
        "architectures": ["Qwen3_5MoeForCausalLM"], "model_type": "qwen3_5_moe_text",
        "num_experts": experts, "num_experts_per_tok": top, "moe_intermediate_size": width,
        "shared_expert_intermediate_size": shared,
    }  # fmt: skip


#: The model cases: two layers, one of each mixer (Gated DeltaNet, then gated attention).
MIXERS = [GDN, ATTENTION]
DENSE = text_config(32, 64, MIXERS, {"intermediate_size": 48})
MOE = text_config(32, 64, MIXERS, moe_ffn(4, 2, 16, 24))
#: A one-layer model 1024 wide: the smallest text config whose matrices can carry
#: spec/ninfer3.md §use hadamard_signs (K a multiple of 1024).
WIDE = text_config(
    1024, 4, [ATTENTION], {"intermediate_size": 2}, attention=(1, 1, 4), mrope=(1, 0, 0), tied=True
)

#: The same model untied and with a vocabulary of 8: the accepted Hadamard case (ninfer3 v2,
#: generator 5), whose head is a matrix of its own.
WIDE_UNTIED = text_config(
    1024, 8, [ATTENTION], {"intermediate_size": 2}, attention=(1, 1, 4), mrope=(1, 0, 0)
)

RESOURCES: dict[str, bytes] = {
    "tokenizer.json": b'{"model": {"type": "WordLevel", "vocab": {}}}',
    "tokenizer_config.json": b"{}",
    "chat_template.jinja": b"{% for m in messages %}{{ m['content'] }}{% endfor %}",
    "generation_config.json": b'{"eos_token_id": 1}',
}


def word_level_tokenizer(vocab: int) -> bytes:
    """A tokenizer.json the `tokenizers` library loads (0.20 and later require the WordLevel
    model's `unk_token`): the words t0 … t{vocab-1} split at white space, t0 standing for any
    unknown word, so a prompt and the generated ids read back as text."""
    doc = {
        "model": {"type": "WordLevel", "vocab": {f"t{i}": i for i in range(vocab)},
                  "unk_token": "t0"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
    }  # fmt: skip
    return json.dumps(doc, separators=(",", ":")).encode()


#: ninfer3 v2 (CHANGELOG.md): the model cases with a tokenizer the installed library accepts;
#: v1 keeps the stub above byte for byte.
RESOURCES_V2: dict[str, bytes] = {**RESOURCES, "tokenizer.json": word_level_tokenizer(64)}
ROW_SPLIT = "row_split_k128_v1"
CONTIGUOUS = "contiguous_le_v1"


def config_json(moe: bool = False) -> dict[str, Any]:
    return copy.deepcopy(MOE if moe else DENSE)


def seeded_value(p: TextParameter, seed: int) -> np.ndarray:
    """One parameter's float32 values from `seeded.uniform`: matrices in ±0.35, zero-centred
    norms in ±0.2, the GDN norm in 1 ± 0.2, A_log in [0, 2), dt_bias in 1 ± 0.2, the embedding
    in ±1.75 (values away from neutral, so a missed 1 + w or a swapped gate shows)."""
    if p.name.endswith("gdn/norm") or p.name.endswith("gdn/dt_bias"):
        return seeded.uniform(seed, p.shape, 0.2) + np.float32(1.0)
    if p.name.endswith("gdn/a_log"):
        return seeded.uniform(seed, p.shape) + np.float32(1.0)
    if p.name.endswith("token_embedding"):
        return seeded.uniform(seed, p.shape, 1.75)
    if p.direct_format is not None:
        return seeded.uniform(seed, p.shape, 0.2)
    return seeded.uniform(seed, p.shape, 0.35)


def parameters(config: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Every spec/ninfer3.md §qwen35-names parameter of `config`, each from its own SplitMix64 seed
    (seed·1000 + index)."""
    return {p.name: seeded_value(p, seed * 1000 + i) for i, p in enumerate(text_parameters(config))}


@dataclass(frozen=True, slots=True)
class Layout:
    """How matrices are stored: `fused` parents (a format, or None for no fusion) and the
    format of the matrices left whole."""

    matrices: str
    fused: str | None = None


def layout_of(fmt: str) -> str:
    return CONTIGUOUS if fmt in ("bf16", "fp32") else ROW_SPLIT


@dataclass
class TextDirectory:
    """The directory pieces of one text model file; invalid cases edit them before `write`.
    `objects` maps an object id to its plan and its encoded bytes, in directory order."""

    config: dict[str, Any]
    objects: dict[str, tuple[TensorSpec | ResourceSpec, bytes]] = field(default_factory=dict)
    bindings: dict[str, Any] = field(default_factory=dict)
    uses: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, str] = field(default_factory=dict)
    #: components beside text (the `ninfer3-vl-model` cases' vision), written after it
    others: dict[str, Any] = field(default_factory=dict)
    #: the text component's proposal record (the `ninfer3-mtp-model` proposal case)
    proposal: dict[str, Any] | None = None

    def tensor(self, object_id: str, values: np.ndarray, fmt: str) -> None:
        """Encode `values` with the canonical encoder of (fmt, its layout) as the object
        `object_id` (replacing one of that id, in place)."""
        shape = tuple(int(n) for n in values.shape)
        blob = get_codec(fmt, layout_of(fmt)).encode(values, shape)
        self.objects[object_id] = (TensorSpec(object_id, shape, fmt, layout_of(fmt)), blob)

    def resource(self, role: str, blob: bytes) -> None:
        self.resources[role] = f"r.{role}"
        self.objects[f"r.{role}"] = (ResourceSpec(f"r.{role}", len(blob)), blob)

    def write(self, path: Path, label: str | None = None) -> Path:
        """Write the file; its artifact_id is the first 16 bytes of SHA-256(label or the file
        name), so regenerating gives the same bytes."""
        artifact_id = hashlib.sha256((label or path.name).encode()).digest()[:16]
        entry, *more = write_artifact(
            path,
            {oid: blob for oid, (_, blob) in self.objects.items()},
            objects=[spec for spec, _ in self.objects.values()],
            components={
                TEXT_COMPONENT: {"config": self.config, "resources": self.resources}
                | ({} if self.proposal is None else {"proposal": self.proposal}),
                **self.others,
            },
            bindings=self.bindings,
            uses=self.uses,
            artifact_id=artifact_id,
        )
        assert not more, "no volume limit is given, so one file"
        return entry


def parents(config: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Parent object id -> the parameters whose rows it holds: per layer, the preferred
    spec/ninfer3.md §qwen35-names fusion groups (a fallback group is skipped when its members are
    already fused)."""
    out: dict[str, tuple[str, ...]] = {}
    taken: set[str] = set()
    for layer in range(config["num_hidden_layers"]):
        for g, group in enumerate(fusion_groups(config, layer)):
            if taken.isdisjoint(group):
                out[f"w.parent.{layer}.{g}"] = group
                taken.update(group)
    return out


def text_directory(
    config: dict[str, Any],
    params: dict[str, np.ndarray],
    layout: Layout,
    resources: dict[str, bytes] | None = None,
) -> TextDirectory:
    """Every parameter bound (parents by `parts`, the rest by `object`), one A16Only Use per
    declared input, and the four spec/ninfer3.md §qwen35-names resources."""
    d = TextDirectory(copy.deepcopy(config))
    for role, blob in (RESOURCES if resources is None else resources).items():
        d.resource(role, blob)
    part_of: dict[str, dict[str, Any]] = {}
    if layout.fused is not None:
        for parent, group in parents(config).items():
            d.tensor(parent, np.concatenate([params[n] for n in group]), layout.fused)
            begin = 0
            for name in group:
                part_of[name] = {"object": parent, "range": [begin, begin + params[name].size]}
                begin += params[name].size
    for p in text_parameters(config):
        if p.name in part_of:
            d.bindings[p.name] = {"parts": [part_of[p.name]]}
        else:
            d.tensor(f"w.{p.name}", params[p.name], p.direct_format or layout.matrices)
            d.bindings[p.name] = {"object": f"w.{p.name}"}
        d.uses += [
            {"parameter": p.name, "input": i, "activation_policy": "A16Only"} for i in p.inputs
        ]
    return d


def hadamard_signs(seed: int, k: int) -> np.ndarray:
    """±1.0 float32 signs from `seeded.uniform` (negative where the draw is)."""
    return np.where(seeded.uniform(seed, (k,)) < 0, np.float32(-1.0), np.float32(1.0))


def hadamard_uses(d: TextDirectory) -> None:
    """hadamard_signs on every Use at a layer's mixer or FFN input (one shared object,
    `w.signs.hidden`) and on the output head's (`w.signs.head`): every matrix of K = hidden, a
    multiple of 1024 (spec/ninfer3.md §use)."""
    k = d.config["hidden_size"]
    d.tensor("w.signs.hidden", hadamard_signs(71, k), "bf16")
    d.tensor("w.signs.head", hadamard_signs(72, k), "bf16")
    for use in d.uses:
        if use["input"].endswith(("/mixer_input", "/ffn_input")):
            use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs.hidden"}}
        elif use["parameter"] == "text/output_head":
            use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs.head"}}
