"""The canonical logical parameter names of Qwen3.5 text, their shapes and Use inputs
(spec/ninfer3.md §qwen35-names).

`text_parameters(config)` lists every parameter a valid text config requires, in a fixed order
(embedding, layers in order, final norm, output head), each with its logical shape computed from the
config, the Use inputs the architecture consumes it at (empty for a *direct* parameter) and, for
direct parameters, the exact format the binder demands: bf16 unless noted, fp32 for the GDN `a_log`
and `dt_bias` (spec/ninfer3.md §validation binder checks). Matrix parameters (those with Use inputs)
may be stored in any registered format and may be parts of a fused parent; `FUSION_GROUPS` lists the
default converter groupings, which only choose parents and never change meaning
(spec/ninfer3.md §qwen35-names).

`config` is the JSON object of `components.text.config`, already validated against
spec/ninfer3.md §qwen35-config (`weightfile.ref.qwen35.config`); this module only reads the keys it
needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weightfile.spec.ninfer3.text_config import FULL_ATTENTION, LINEAR_ATTENTION

DIRECT_BF16 = "bf16"
DIRECT_FP32 = "fp32"
TEXT_PREFIX = "text/"


@dataclass(frozen=True, slots=True)
class TextParameter:
    """One canonical parameter: name, logical C-order shape, Use inputs, direct format."""

    name: str
    shape: tuple[int, ...]
    inputs: tuple[str, ...] = ()
    #: For a direct parameter (no Use inputs) the one format it must have; None for a matrix.
    direct_format: str | None = DIRECT_BF16

    @property
    def is_direct(self) -> bool:
        return not self.inputs


def _matrix(name: str, shape: tuple[int, int], *inputs: str) -> TextParameter:
    """A projection consumed through Uses; any registered format, possibly a part of a parent."""
    return TextParameter(name, shape, tuple(inputs), None)


def _direct(name: str, shape: tuple[int, ...], fmt: str = DIRECT_BF16) -> TextParameter:
    """A parameter read element-wise (norms, embedding, convolution, GDN gates)."""
    return TextParameter(name, shape, (), fmt)


def layer_prefix(layer: int) -> str:
    return f"{TEXT_PREFIX}layers/{layer}/"


def is_moe(config: Mapping[str, Any]) -> bool:
    """The MoE FFN keys are present (the binder has already tied this to the architecture)."""
    return "num_experts" in config


def attention_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """Gated full attention (spec/ninfer3.md §qwen35-names): query/gate [Q,H], key/value [Kw,H],
    norms [D], output [H,Q]."""
    p, h, d = layer_prefix(layer), config["hidden_size"], config["head_dim"]
    q, kw = config["num_attention_heads"] * d, config["num_key_value_heads"] * d
    mixer = p + "mixer_input"
    return [
        _matrix(p + "attention/query", (q, h), mixer),
        _matrix(p + "attention/key", (kw, h), mixer),
        _matrix(p + "attention/gate", (q, h), mixer),
        _matrix(p + "attention/value", (kw, h), mixer),
        _direct(p + "attention/query_norm", (d,)),
        _direct(p + "attention/key_norm", (d,)),
        _matrix(p + "attention/output", (h, q), p + "attention/gated_output"),
    ]


def gdn_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """Gated DeltaNet (spec/ninfer3.md §qwen35-names): q/k [Kg,H], v/z [Vg,H], a/b [Nv,H], fp32
    gates, conv, norm, out."""
    p, h = layer_prefix(layer), config["hidden_size"]
    kg = config["linear_num_key_heads"] * config["linear_key_head_dim"]
    nv, dv = config["linear_num_value_heads"], config["linear_value_head_dim"]
    vg = nv * dv
    mixer = p + "mixer_input"
    return [
        _matrix(p + "gdn/query", (kg, h), mixer),
        _matrix(p + "gdn/key", (kg, h), mixer),
        _matrix(p + "gdn/value", (vg, h), mixer),
        _matrix(p + "gdn/z", (vg, h), mixer),
        _matrix(p + "gdn/a_projection", (nv, h), mixer),
        _matrix(p + "gdn/b_projection", (nv, h), mixer),
        _direct(p + "gdn/a_log", (nv,), DIRECT_FP32),
        _direct(p + "gdn/dt_bias", (nv,), DIRECT_FP32),
        # [kernel tap, channel]: the transpose of HF's conv1d.weight [channels, 1, kernel].
        _direct(p + "gdn/convolution", (config["linear_conv_kernel_dim"], 2 * kg + vg)),
        _direct(p + "gdn/norm", (dv,)),
        _matrix(p + "gdn/output", (h, vg), p + "gdn/gated_output"),
    ]


def dense_ffn_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """Dense SwiGLU (spec/ninfer3.md §qwen35-names): gate/up [I,H] at ffn_input, down [H,I] at
    mlp/product."""
    p, h, i = layer_prefix(layer), config["hidden_size"], config["intermediate_size"]
    return [
        _matrix(p + "mlp/gate", (i, h), p + "ffn_input"),
        _matrix(p + "mlp/up", (i, h), p + "ffn_input"),
        _matrix(p + "mlp/down", (h, i), p + "mlp/product"),
    ]


def moe_ffn_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """MoE with a shared expert (spec/ninfer3.md §qwen35-names): router [E,H], shared_score [1,H],
    experts, shared."""
    p, h = layer_prefix(layer), config["hidden_size"]
    ir, is_ = config["moe_intermediate_size"], config["shared_expert_intermediate_size"]
    ffn = p + "ffn_input"
    params = [
        _matrix(p + "moe/router", (config["num_experts"], h), ffn),
        _matrix(p + "moe/shared_score", (1, h), ffn),
    ]
    for e in range(config["num_experts"]):
        ep = f"{p}moe/experts/{e}/"
        params += [
            _matrix(ep + "gate", (ir, h), ffn),
            _matrix(ep + "up", (ir, h), ffn),
            _matrix(ep + "down", (h, ir), ep + "product"),
        ]
    params += [
        _matrix(p + "moe/shared/gate", (is_, h), ffn),
        _matrix(p + "moe/shared/up", (is_, h), ffn),
        _matrix(p + "moe/shared/down", (h, is_), p + "moe/shared/product"),
    ]
    return params


def layer_parameters(config: Mapping[str, Any], layer: int) -> list[TextParameter]:
    """One decoder layer: input norm, its mixer (by layer type), post-attention norm, its FFN."""
    p, h = layer_prefix(layer), config["hidden_size"]
    kind = config["layer_types"][layer]
    mixer = attention_parameters if kind == FULL_ATTENTION else gdn_parameters
    assert kind in (FULL_ATTENTION, LINEAR_ATTENTION), kind  # config validation ran first
    ffn = moe_ffn_parameters if is_moe(config) else dense_ffn_parameters
    return [
        _direct(p + "input_norm", (h,)),
        *mixer(config, layer),
        _direct(p + "post_attention_norm", (h,)),
        *ffn(config, layer),
    ]


def text_parameters(config: Mapping[str, Any]) -> list[TextParameter]:
    """Every canonical text parameter the config requires, in model order (spec/ninfer3.md
    §qwen35-names).

    `text/output_head` is listed even with `tie_word_embeddings`: spec/ninfer3.md §qwen35-names
    names it with no tied exemption, and the file binds it (possibly to the embedding's object).
    """
    h, v = config["hidden_size"], config["vocab_size"]
    params = [_direct(TEXT_PREFIX + "token_embedding", (v, h))]
    for layer in range(config["num_hidden_layers"]):
        params += layer_parameters(config, layer)
    params.append(_direct(TEXT_PREFIX + "final_norm", (h,)))
    params.append(_matrix(TEXT_PREFIX + "output_head", (v, h), TEXT_PREFIX + "final_hidden"))
    return params


def fusion_groups(config: Mapping[str, Any], layer: int) -> list[tuple[str, ...]]:
    """The default converter's parent groupings for one layer, preferred first
    (spec/ninfer3.md §qwen35-names).

    Attention {Q,K,gate,V} falls back to {Q,K} and {gate,V}; GDN {q,k,v,z} to {q,k} and {v,z},
    plus {a,b}; dense {gate,up}; MoE {router, shared_score}, all experts' {gate,up}, all
    experts' down, and the shared {gate,up}. Groupings only choose parents.
    """
    p = layer_prefix(layer)
    if config["layer_types"][layer] == FULL_ATTENTION:
        a = [p + "attention/" + r for r in ("query", "key", "gate", "value")]
        groups = [tuple(a), tuple(a[:2]), tuple(a[2:])]
    else:
        g = [p + "gdn/" + r for r in ("query", "key", "value", "z")]
        groups = [tuple(g), tuple(g[:2]), tuple(g[2:])]
        groups.append((p + "gdn/a_projection", p + "gdn/b_projection"))
    if is_moe(config):
        experts = range(config["num_experts"])
        m = p + "moe/"
        groups.append((m + "router", m + "shared_score"))
        groups.append(tuple(f"{m}experts/{e}/{r}" for e in experts for r in ("gate", "up")))
        groups.append(tuple(f"{m}experts/{e}/down" for e in experts))
        groups.append((m + "shared/gate", m + "shared/up"))
    else:
        groups.append((p + "mlp/gate", p + "mlp/up"))
    return groups
