"""Where each canonical Qwen3.5 text parameter (ninfer-v3.md §6.2) is in a transformers checkpoint.

Most parameters are one transformers tensor, unchanged. Three are rearranged:

* `attention/query` and `attention/gate` share `q_proj`, whose output is, per head, D query rows
  followed by D gate rows (transformers views it as [heads, 2·D] and chunks the last axis); the
  canonical parameters are the query rows and the gate rows of all heads, in head order.
* `gdn/query`, `gdn/key` and `gdn/value` are the row blocks [0, Kg), [Kg, 2Kg), [2Kg, 2Kg+Vg)
  of `in_proj_qkv` (transformers splits its output in that order).
* `gdn/convolution` is [kernel tap, channel], the transpose of the depthwise `conv1d.weight`
  [channels, 1, kernel] (text_names.gdn_parameters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter

SHAPE_RULE = "qwen35.import.shape"

#: canonical layer-relative name -> the transformers name under `layers.{i}.`
LAYER_TENSORS = {
    "input_norm": "input_layernorm.weight",
    "post_attention_norm": "post_attention_layernorm.weight",
    "attention/query": "self_attn.q_proj.weight",
    "attention/gate": "self_attn.q_proj.weight",
    "attention/key": "self_attn.k_proj.weight",
    "attention/value": "self_attn.v_proj.weight",
    "attention/query_norm": "self_attn.q_norm.weight",
    "attention/key_norm": "self_attn.k_norm.weight",
    "attention/output": "self_attn.o_proj.weight",
    "gdn/query": "linear_attn.in_proj_qkv.weight",
    "gdn/key": "linear_attn.in_proj_qkv.weight",
    "gdn/value": "linear_attn.in_proj_qkv.weight",
    "gdn/z": "linear_attn.in_proj_z.weight",
    "gdn/a_projection": "linear_attn.in_proj_a.weight",
    "gdn/b_projection": "linear_attn.in_proj_b.weight",
    "gdn/a_log": "linear_attn.A_log",
    "gdn/dt_bias": "linear_attn.dt_bias",
    "gdn/convolution": "linear_attn.conv1d.weight",
    "gdn/norm": "linear_attn.norm.weight",
    "gdn/output": "linear_attn.out_proj.weight",
    "mlp/gate": "mlp.gate_proj.weight",
    "mlp/up": "mlp.up_proj.weight",
    "mlp/down": "mlp.down_proj.weight",
}
#: canonical top-level name -> transformers name under the text model prefix (None: no prefix)
TOP_TENSORS = {
    "token_embedding": "embed_tokens.weight",
    "final_norm": "norm.weight",
    "output_head": None,
}
LM_HEAD = "lm_head.weight"


def text_model_prefix(cfg: Mapping[str, Any]) -> str:
    """`model.language_model.` for a multimodal checkpoint (it has `text_config`), else `model.`."""
    return "model.language_model." if "text_config" in cfg else "model."


@dataclass(frozen=True, slots=True)
class Source:
    """A canonical parameter's transformers tensor and how its values are taken from it."""

    hf_name: str
    take: Callable[[np.ndarray], np.ndarray]


def split_layer(name: str) -> tuple[int, str] | None:
    """`text/layers/3/mlp/up` -> (3, "mlp/up"); a top-level name -> None."""
    parts = name.removeprefix(TEXT_PREFIX).split("/", 2)
    if parts[0] != "layers":
        return None
    return int(parts[1]), parts[2]


def query_gate_rows(which: int, head_dim: int) -> Callable[[np.ndarray], np.ndarray]:
    """Rows of q_proj [heads·2·D, H] for query (which=0) or gate (which=1), head by head."""

    def take(w: np.ndarray) -> np.ndarray:
        heads = w.shape[0] // (2 * head_dim)
        return w.reshape(heads, 2, head_dim, -1)[:, which].reshape(heads * head_dim, -1)

    return take


def row_block(begin: int, end: int | None) -> Callable[[np.ndarray], np.ndarray]:
    return lambda w: w[begin:end]


def conv_taps(w: np.ndarray) -> np.ndarray:
    """conv1d.weight [C, 1, kernel] -> [kernel, C]."""
    return np.ascontiguousarray(w[:, 0, :].T)


def unchanged(w: np.ndarray) -> np.ndarray:
    return w


def take_for(config: Mapping[str, Any], short: str) -> Callable[[np.ndarray], np.ndarray]:
    """How the values of the layer parameter `short` come out of its transformers tensor."""
    if short in ("attention/query", "attention/gate"):
        return query_gate_rows(int(short == "attention/gate"), config["head_dim"])
    if short in ("gdn/query", "gdn/key", "gdn/value"):
        kg = config["linear_num_key_heads"] * config["linear_key_head_dim"]
        # value takes every remaining row, so a tensor with more or fewer rows than 2Kg + Vg
        # gives value the wrong shape, which parameter_values reports
        blocks = {"gdn/query": (0, kg), "gdn/key": (kg, 2 * kg), "gdn/value": (2 * kg, None)}
        return row_block(*blocks[short])
    if short == "gdn/convolution":
        return conv_taps
    return unchanged


def source(config: Mapping[str, Any], prefix: str, name: str) -> Source:
    """The transformers tensor of canonical parameter `name` (module docstring)."""
    layer = split_layer(name)
    if layer is None:
        hf = TOP_TENSORS[name.removeprefix(TEXT_PREFIX)]
        return Source(LM_HEAD if hf is None else prefix + hf, unchanged)
    i, short = layer
    return Source(f"{prefix}layers.{i}.{LAYER_TENSORS[short]}", take_for(config, short))


def parameter_values(
    parameter: TextParameter, src: Source, tensor: Callable[[str], np.ndarray]
) -> np.ndarray:
    """The parameter's float32 values in its canonical shape, or an error naming the tensor."""
    try:
        values = src.take(tensor(src.hf_name))
    except (IndexError, ValueError) as exc:  # the tensor's shape does not fit the config
        raise InvalidError(SHAPE_RULE, f"{src.hf_name}: {exc}", path=src.hf_name) from None
    if tuple(values.shape) != parameter.shape:
        raise InvalidError(
            SHAPE_RULE,
            f"{src.hf_name} gives {parameter.name} shape {tuple(values.shape)}, "
            f"config says {parameter.shape}",
            path=src.hf_name,
        )
    return np.ascontiguousarray(values, dtype=np.float32)
