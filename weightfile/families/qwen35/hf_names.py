"""Where each canonical Qwen3.5 text parameter (spec/ninfer3.md §qwen35-names) is in a transformers
checkpoint.

The one mapping from transformers names to canonical ones: `qwen35.hf.canonical_from_hf` (a
whole state dict) and the `.ninfer` importer (one tensor at a time, read lazily) both ask
`source` for a parameter's tensor and take its values with `parameter_values`.

Most parameters are one transformers tensor, unchanged. Some are rearranged:

* `attention/query` and `attention/gate` share `q_proj`, whose output is, per head, D query rows
  followed by D gate rows (transformers views it as [heads, 2·D] and chunks the last axis); the
  canonical parameters are the query rows and the gate rows of all heads, in head order.
* `gdn/query`, `gdn/key` and `gdn/value` are the row blocks [0, Kg), [Kg, 2Kg), [2Kg, 2Kg+Vg)
  of `in_proj_qkv` (transformers splits its output in that order).
* `gdn/convolution` is [kernel tap, channel], the transpose of the depthwise `conv1d.weight`
  [channels, 1, kernel] (text_names.gdn_parameters).
* MoE experts: hub files carry `experts.{e}.{gate,up,down}_proj`; transformers 5.x in-memory
  state dicts fuse them into `experts.gate_up_proj` [E, 2I, H] (gate rows, then up) and
  `experts.down_proj` [E, H, I] (spec/models.md §qwen3-moe). Both are accepted.
* with tied embeddings `output_head` is the embedding tensor (no `lm_head.weight` is read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter

#: the text model's tensors are under this prefix in a text-only checkpoint ...
TEXT_MODEL_PREFIX = "model."
#: ... and under this one in a multimodal (VL) checkpoint (spec/models.md §tiny-checkpoints)
VL_TEXT_MODEL_PREFIX = "model.language_model."
LM_HEAD = "lm_head.weight"
FFN_ROLES = ("gate", "up", "down")

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
    "moe/router": "mlp.gate.weight",
    "moe/shared_score": "mlp.shared_expert_gate.weight",
    **{f"mlp/{role}": f"mlp.{role}_proj.weight" for role in FFN_ROLES},
    **{f"moe/shared/{role}": f"mlp.shared_expert.{role}_proj.weight" for role in FFN_ROLES},
}
#: canonical top-level name -> transformers name under the text model prefix
TOP_TENSORS = {"token_embedding": "embed_tokens.weight", "final_norm": "norm.weight"}
FUSED_GATE_UP = "mlp.experts.gate_up_proj"
FUSED_DOWN = "mlp.experts.down_proj"


def text_model_prefix(multimodal: bool) -> str:
    """`model.language_model.` for a multimodal checkpoint, else `model.` (spec/models.md
    §tiny-checkpoints)."""
    return VL_TEXT_MODEL_PREFIX if multimodal else TEXT_MODEL_PREFIX


def fused_experts_name(prefix: str, layer: int) -> str:
    """The fused gate/up expert tensor of a layer: its presence marks a fused checkpoint."""
    return f"{prefix}layers.{layer}.{FUSED_GATE_UP}"


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


def require_rank(w: np.ndarray, rank: int) -> None:
    """A tensor of another rank is refused here rather than reshaped into a plausible one."""
    if w.ndim != rank:
        raise ValueError(f"rank {w.ndim}, expected {rank}")


def query_gate_rows(which: int, head_dim: int) -> Callable[[np.ndarray], np.ndarray]:
    """Rows of q_proj [heads·2·D, H] for query (which=0) or gate (which=1), head by head."""

    def take(w: np.ndarray) -> np.ndarray:
        require_rank(w, 2)
        heads = w.shape[0] // (2 * head_dim)
        return w.reshape(heads, 2, head_dim, w.shape[1])[:, which].reshape(heads * head_dim, -1)

    return take


def row_block(begin: int, end: int | None) -> Callable[[np.ndarray], np.ndarray]:
    """Rows [begin, end) of a matrix (end None: every remaining row)."""

    def take(w: np.ndarray) -> np.ndarray:
        require_rank(w, 2)
        return w[begin:end]

    return take


def conv_taps(w: np.ndarray) -> np.ndarray:
    """conv1d.weight [C, 1, kernel] -> [kernel, C]."""
    require_rank(w, 3)
    if w.shape[1] != 1:
        raise ValueError(f"conv1d.weight {w.shape} is not depthwise [C, 1, kernel]")
    return np.ascontiguousarray(w[:, 0, :].T)


def expert_rows(
    expert: int, begin: int, end: int, shape: tuple[int, int, int]
) -> Callable[[np.ndarray], np.ndarray]:
    """Rows [begin, end) of one expert of a fused [E, rows, cols] tensor, which must be `shape`."""

    def take(w: np.ndarray) -> np.ndarray:
        if w.shape != shape:
            raise ValueError(f"fused experts have shape {w.shape}, expected {shape}")
        return w[expert, begin:end]

    return take


def unchanged(w: np.ndarray) -> np.ndarray:
    return w


def take_for(config: Mapping[str, Any], short: str) -> Callable[[np.ndarray], np.ndarray]:
    """How the values of the (unfused) layer parameter `short` come out of its tensor."""
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


def expert_source(config: Mapping[str, Any], layer_src: str, short: str, fused: bool) -> Source:
    """`moe/experts/{e}/{role}`: a hub tensor of its own, or rows of the fused v5 tensors."""
    _, _, expert, role = short.split("/")
    e = int(expert)
    if not fused:
        return Source(f"{layer_src}mlp.experts.{e}.{role}_proj.weight", unchanged)
    n, i, h = config["num_experts"], config["moe_intermediate_size"], config["hidden_size"]
    if role == "down":
        return Source(layer_src + FUSED_DOWN, expert_rows(e, 0, h, (n, h, i)))
    begin = 0 if role == "gate" else i
    return Source(layer_src + FUSED_GATE_UP, expert_rows(e, begin, begin + i, (n, 2 * i, h)))


def source(
    config: Mapping[str, Any], prefix: str, name: str, *, fused_experts: bool = False
) -> Source:
    """The transformers tensor of canonical parameter `name` (module docstring); `config` is the
    closed spec/ninfer3.md §qwen35-config object, `prefix` the text model's
    (`text_model_prefix`)."""
    layer = split_layer(name)
    if layer is None:
        short = name.removeprefix(TEXT_PREFIX)
        if short == "output_head":
            if not config["tie_word_embeddings"]:
                return Source(LM_HEAD, unchanged)
            short = "token_embedding"  # tied: the head's values are the embedding's
        return Source(prefix + TOP_TENSORS[short], unchanged)
    i, short = layer
    layer_src = f"{prefix}layers.{i}."
    if short.startswith("moe/experts/"):
        return expert_source(config, layer_src, short, fused_experts)
    return Source(layer_src + LAYER_TENSORS[short], take_for(config, short))


def parameter_values(
    parameter: TextParameter, src: Source, tensor: Callable[[str], np.ndarray], rule: str
) -> np.ndarray:
    """The parameter's float32 values in its canonical shape, or InvalidError(`rule`) naming the
    transformers tensor; `tensor` reads a tensor by name (and raises if it is missing)."""
    stored = tensor(src.hf_name)  # outside the try: a missing or unreadable tensor keeps its error
    try:
        values = src.take(stored)
    except (IndexError, ValueError) as exc:  # the tensor's shape does not fit the config
        raise InvalidError(rule, f"{src.hf_name}: {exc}", path=src.hf_name) from None
    if tuple(values.shape) != parameter.shape:
        raise InvalidError(
            rule,
            f"{src.hf_name} gives {parameter.name} shape {tuple(values.shape)}, "
            f"config says {parameter.shape}",
            path=src.hf_name,
        )
    return np.ascontiguousarray(values, dtype=np.float32)
