"""The `vision` component of a Qwen3.5 `.ninfer` file as data: its closed config, its resource
roles, the image token texts and its canonical parameters with their shapes and Use inputs
(spec/ninfer3.md §qwen35-vision-names).

`vision_parameters(config, text_hidden)` lists every parameter, in a fixed order (patch embedding,
position table, blocks in order, merger), with the same `TextParameter` record the text names use:
matrices (Use inputs) may be stored in any registered format, direct parameters are bf16.
The checks of the config live in `weightfile.ref.qwen35.vision`; this module only says what the
keys and names are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weightfile.spec.ninfer3.text_config import DENSE_ARCHITECTURE, MOE_ARCHITECTURE
from weightfile.spec.ninfer3.text_names import DIRECT_BF16, TextParameter

VISION_COMPONENT = "vision"
VISION_PREFIX = "vision/"
#: The component the vision rows feed (spec/ninfer3.md §component `target`).
VISION_TARGET = "text"
#: text architecture -> the vision model_type paired with it.
VISION_MODEL_TYPES: dict[str, str] = {
    DENSE_ARCHITECTURE: "qwen3_5_vision",
    MOE_ARCHITECTURE: "qwen3_5_moe_vision",
}
#: Every key of the closed vision config; all but model_type are integers in [1, 2^32 - 1].
VISION_CONFIG_KEYS: tuple[str, ...] = (
    "model_type",
    "depth",
    "hidden_size",
    "intermediate_size",
    "num_heads",
    "patch_size",
    "temporal_patch_size",
    "spatial_merge_size",
    "num_position_embeddings",
)
#: Resource roles the vision runtime requires.
VISION_RESOURCE_ROLES: tuple[str, ...] = (
    "preprocessor_config.json",
    "video_preprocessor_config.json",
)
#: The multimodal prompt's tokens, looked up by their text in the tokenizer.json resource.
VISION_TOKENS: dict[str, str] = {
    "vision_start": "<|vision_start|>",
    "vision_end": "<|vision_end|>",
    "image": "<|image_pad|>",
    "video": "<|video_pad|>",
}
#: What the closed config leaves fixed (spec/models.md §qwen35-vision).
IN_CHANNELS = 3
LAYERNORM_EPS = 1e-6


def _matrix(name: str, shape: tuple[int, int], consumed: str) -> TextParameter:
    return TextParameter(name, shape, (consumed,), None)


def _direct(name: str, shape: tuple[int, ...]) -> TextParameter:
    return TextParameter(name, shape, (), DIRECT_BF16)


def block_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """One vision block: LayerNorms, q/k/v with biases, output, MLP (spec/ninfer3.md
    §qwen35-vision-names)."""
    p = f"{VISION_PREFIX}layers/{layer}/"
    w, i = config["hidden_size"], config["intermediate_size"]
    attn = p + "attention_input"
    out = [_direct(p + "norm1_weight", (w,)), _direct(p + "norm1_bias", (w,))]
    out += [_matrix(p + f"attention/{r}", (w, w), attn) for r in ("query", "key", "value")]
    out += [_direct(p + f"attention/{r}_bias", (w,)) for r in ("query", "key", "value")]
    out += [
        _matrix(p + "attention/output", (w, w), p + "attention_output"),
        _direct(p + "attention/output_bias", (w,)),
        _direct(p + "norm2_weight", (w,)),
        _direct(p + "norm2_bias", (w,)),
        _matrix(p + "mlp/fc1", (i, w), p + "mlp_input"),
        _direct(p + "mlp/fc1_bias", (i,)),
        _matrix(p + "mlp/fc2", (w, i), p + "mlp_activation"),
        _direct(p + "mlp/fc2_bias", (w,)),
    ]
    return out


def vision_parameters(config: Mapping[str, Any], text_hidden: int) -> list[TextParameter]:
    """Every parameter of a valid vision config whose merger feeds a text model of width
    `text_hidden`."""
    v, w = VISION_PREFIX, config["hidden_size"]
    patch = IN_CHANNELS * config["temporal_patch_size"] * config["patch_size"] ** 2
    m = w * config["spatial_merge_size"] ** 2
    out = [
        _matrix(v + "patch_embedding", (w, patch), v + "patch_input"),
        _direct(v + "patch_embedding_bias", (w,)),
        _direct(v + "position_embedding", (config["num_position_embeddings"], w)),
    ]
    for layer in range(config["depth"]):
        out += block_parameters(config, layer)
    out += [
        _direct(v + "merger/norm_weight", (w,)),
        _direct(v + "merger/norm_bias", (w,)),
        _matrix(v + "merger/fc1", (m, m), v + "merger/input"),
        _direct(v + "merger/fc1_bias", (m,)),
        _matrix(v + "merger/fc2", (text_hidden, m), v + "merger/activation"),
        _direct(v + "merger/fc2_bias", (text_hidden,)),
    ]
    return out


def qkv_groups(config: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The official packing: each layer's {query, key, value} in one parent, their biases in
    another (only parents; never meaning)."""
    out = []
    for layer in range(config["depth"]):
        p = f"{VISION_PREFIX}layers/{layer}/attention/"
        out.append(tuple(p + r for r in ("query", "key", "value")))
        out.append(tuple(p + r + "_bias" for r in ("query", "key", "value")))
    return out
