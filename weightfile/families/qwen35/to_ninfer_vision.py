"""The vision component of an imported Qwen3.5 file: config, parents, bindings, Uses and where
each parameter is in a transformers `Qwen3_5ForConditionalGeneration` checkpoint
(spec/ninfer3.md §qwen35-vision-names, spec/models.md §qwen35-vision).

Formats: without `--format`, the official ones (patch embedding `q6_g64_fp16`; block
query/key/value and fc1 `q4_g64_fp16`; block output and fc2 `q5_g64_fp16`; merger fc1/fc2
`q8_g32_fp16`); with `--format F`, F for every vision matrix as for the text ones, so an all-bf16
file compares exactly with transformers. Direct parameters are bf16. Packing is the official
one: each layer's {query, key, value} in one parent, their biases in another. Every Use is
`A16Only`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.recipes import Recipe
from weightfile.spec.ninfer3.text_names import TextParameter
from weightfile.spec.ninfer3.vision_names import (
    VISION_CONFIG_KEYS,
    VISION_MODEL_TYPES,
    VISION_PREFIX,
    qkv_groups,
    vision_parameters,
)

from .to_ninfer_plan import (
    ACTIVATION_POLICY,
    BF16,
    CONTIGUOUS,
    MATRIX_FORMATS,
    Parent,
    recipe_parents,
)

HF_VISION = "model.visual."
#: The official recipe's vision matrix formats, by the parameter name's last part.
OFFICIAL_FORMATS = {
    "patch_embedding": "q6_g64_fp16",
    "query": "q4_g64_fp16",
    "key": "q4_g64_fp16",
    "value": "q4_g64_fp16",
    "fc1": "q4_g64_fp16",
    "output": "q5_g64_fp16",
    "fc2": "q5_g64_fp16",
}
MERGER_FORMAT = "q8_g32_fp16"


def vision_config(hf: Mapping[str, Any], architecture: str) -> dict[str, Any]:
    """The closed vision config from a checkpoint's `vision_config`; a tower with DeepStack, other
    channels or another block activation is not the Qwen3.5 tower (`qwen35.import.config`)."""
    v = hf["vision_config"]
    odd = (
        v.get("deepstack_visual_indexes") or v.get("in_channels", 3) != 3
        or v.get("hidden_act", "gelu_pytorch_tanh") != "gelu_pytorch_tanh"
    )  # fmt: skip
    if odd:
        raise InvalidError(
            "qwen35.import.config", "vision_config is not the Qwen3.5 tower", path="vision_config"
        )
    out = {k: v[k] for k in VISION_CONFIG_KEYS[1:]}
    return {"model_type": VISION_MODEL_TYPES[architecture], **out}


def matrix_format(p: TextParameter, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    if p.name.startswith(VISION_PREFIX + "merger/"):
        return MERGER_FORMAT
    return OFFICIAL_FORMATS[p.name.rsplit("/", 1)[1]]


def vision_object_id(names: tuple[str, ...]) -> str:
    """`v.layers/0/attention/query+key+value` style ids."""
    rest = [n.rsplit("/", 1)[1] for n in names[1:]]
    return "v." + "+".join([names[0].removeprefix(VISION_PREFIX), *rest])


def vision_parents(
    config: Mapping[str, Any], text_hidden: int, fmt: str | None, recipe: Recipe | None = None
) -> list[Parent]:
    """Parents in parameter order: the official {q, k, v} and bias packings, the rest alone;
    with a recipe, its packing and formats (spec/ninfer3.md §recipes)."""
    if recipe is not None:
        return recipe_parents(vision_parameters(config, text_hidden), recipe, fmt, vision_object_id)
    params = {p.name: p for p in vision_parameters(config, text_hidden)}
    member_of = {n: g for g in qkv_groups(config) for n in g}
    out, placed = [], set()
    for p in params.values():
        if p.name in placed:
            continue
        names = member_of.get(p.name, (p.name,))
        members = tuple(params[n] for n in names)
        if p.is_direct:
            layout, pfmt = CONTIGUOUS, BF16
        else:
            pfmt = matrix_format(p, fmt)
            layout = MATRIX_FORMATS[pfmt]
        out.append(Parent(vision_object_id(names), members, pfmt, layout))
        placed.update(names)
    return out


def vision_uses(config: Mapping[str, Any], text_hidden: int) -> list[dict[str, str]]:
    return [
        {"parameter": p.name, "input": i, "activation_policy": ACTIVATION_POLICY}
        for p in vision_parameters(config, text_hidden)
        for i in p.inputs
    ]


def hf_source(name: str) -> tuple[str, Callable[[np.ndarray], np.ndarray]]:
    """(checkpoint tensor, how to cut the parameter from it) of one vision parameter."""
    short = name.removeprefix(VISION_PREFIX)
    if short.startswith("layers/"):
        _, i, rest = short.split("/", 2)
        b = f"{HF_VISION}blocks.{i}."
        for k, r in enumerate(("query", "key", "value")):
            if rest in (f"attention/{r}", f"attention/{r}_bias"):
                suffix = "bias" if rest.endswith("_bias") else "weight"
                return b + "attn.qkv." + suffix, lambda w, k=k: np.split(w, 3)[k]
        table = {
            "norm1_weight": "norm1.weight", "norm1_bias": "norm1.bias",
            "norm2_weight": "norm2.weight", "norm2_bias": "norm2.bias",
            "attention/output": "attn.proj.weight", "attention/output_bias": "attn.proj.bias",
            "mlp/fc1": "mlp.linear_fc1.weight", "mlp/fc1_bias": "mlp.linear_fc1.bias",
            "mlp/fc2": "mlp.linear_fc2.weight", "mlp/fc2_bias": "mlp.linear_fc2.bias",
        }  # fmt: skip
        return b + table[rest], lambda w: w
    top = {
        "patch_embedding": "patch_embed.proj.weight",
        "patch_embedding_bias": "patch_embed.proj.bias", "position_embedding": "pos_embed.weight",
        "merger/norm_weight": "merger.norm.weight", "merger/norm_bias": "merger.norm.bias",
        "merger/fc1": "merger.linear_fc1.weight", "merger/fc1_bias": "merger.linear_fc1.bias",
        "merger/fc2": "merger.linear_fc2.weight", "merger/fc2_bias": "merger.linear_fc2.bias",
    }  # fmt: skip
    return HF_VISION + top[short], lambda w: w


def vision_values(parent: Parent, tensor: Callable[[str], np.ndarray]) -> np.ndarray:
    """The members' float32 values stacked by rows, each in its parameter's shape
    (`qwen35.import.shape` when a tensor does not fit)."""
    parts = []
    for m in parent.members:
        hf_name, cut = hf_source(m.name)
        w = cut(np.asarray(tensor(hf_name), dtype=np.float32))
        if w.size != int(np.prod(m.shape)):
            raise InvalidError(
                "qwen35.import.shape",
                f"{hf_name} {list(w.shape)} does not give {m.name} {list(m.shape)}",
                path=hf_name,
            )
        parts.append(w.reshape(m.shape))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def hf_names(config: Mapping[str, Any], text_hidden: int) -> set[str]:
    return {hf_source(p.name)[0] for p in vision_parameters(config, text_hidden)}
