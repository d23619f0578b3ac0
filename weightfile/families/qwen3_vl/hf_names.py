"""Where each Qwen3-VL weight is in a Hugging Face Qwen3VLForConditionalGeneration checkpoint
(spec/models.md §qwen3-vl, spec/vqf.md §vision-tensors).

The text tower's tensors are Qwen3's under `model.language_model.` instead of `model.`
(`text_name` maps one to the other); the vision tower's are under `model.visual.`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

TEXT_PREFIX = "model.language_model."
VISUAL = "model.visual."

PATCH_EMBED = VISUAL + "patch_embed.proj.weight"
PATCH_BIAS = VISUAL + "patch_embed.proj.bias"
POS_EMBED = VISUAL + "pos_embed.weight"

#: VQF per-block stacked name (spec/vqf.md §vision-tensors) -> the tensor after
#: "model.visual.blocks.L.".
BLOCK_TENSORS: dict[str, str] = {
    "v_q8_qkv": "attn.qkv.weight",
    "v_q8_proj": "attn.proj.weight",
    "v_q8_fc1": "mlp.linear_fc1.weight",
    "v_q8_fc2": "mlp.linear_fc2.weight",
    "v_qkv_bias": "attn.qkv.bias",
    "v_proj_bias": "attn.proj.bias",
    "v_norm1_w": "norm1.weight",
    "v_norm1_b": "norm1.bias",
    "v_norm2_w": "norm2.weight",
    "v_norm2_b": "norm2.bias",
    "v_fc1_bias": "mlp.linear_fc1.bias",
    "v_fc2_bias": "mlp.linear_fc2.bias",
}
#: VQF merger name suffix -> the tensor after "model.visual.merger." or
#: "model.visual.deepstack_merger_list.J.".
MERGER_TENSORS: dict[str, str] = {
    "nw": "norm.weight",
    "nb": "norm.bias",
    "f1w": "linear_fc1.weight",
    "f1b": "linear_fc1.bias",
    "f2w": "linear_fc2.weight",
    "f2b": "linear_fc2.bias",
}


def block_tensor(layer: int, vqf_name: str) -> str:
    return f"{VISUAL}blocks.{layer}.{BLOCK_TENSORS[vqf_name]}"


def merger_tensor(part: str, deepstack: int | None = None) -> str:
    where = "merger." if deepstack is None else f"deepstack_merger_list.{deepstack}."
    return VISUAL + where + MERGER_TENSORS[part]


def text_name(qwen3_name: str) -> str:
    """A Qwen3 name (model.layers.0.…, lm_head.weight) -> its Qwen3-VL name."""
    if qwen3_name.startswith("model."):
        return TEXT_PREFIX + qwen3_name[len("model.") :]
    return qwen3_name


class TextView(Mapping[str, np.ndarray]):
    """The text tower of a Qwen3-VL state dict under Qwen3's names, read lazily."""

    def __init__(self, sd: Mapping[str, np.ndarray]) -> None:
        self._sd = sd

    def __getitem__(self, name: str) -> np.ndarray:
        return self._sd[text_name(name)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and text_name(name) in self._sd

    def __iter__(self) -> Iterator[str]:
        for n in self._sd:
            if n.startswith(TEXT_PREFIX):
                yield "model." + n[len(TEXT_PREFIX) :]
            elif not n.startswith(VISUAL):
                yield n

    def __len__(self) -> int:
        return sum(1 for _ in self)
