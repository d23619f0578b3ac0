"""The `mtp` component and the proposal head of a Qwen3.5 `.ninfer` file as data: the closed MTP
config, its canonical parameters with their shapes and Use inputs, and the proposal parameters
(spec/ninfer3.md §qwen35-mtp-names, spec/models.md §qwen35-mtp).

`mtp_parameters(text_config)` lists the MTP parameters in a fixed order (input projection, the
three norms, then one full-attention block named as text layer 0's, under `mtp/layers/0/`, with
the text model's FFN form), with the same `TextParameter` record the text names use. The checks
live in `weightfile.ref.qwen35.mtp_bind`; this module only says what the names are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weightfile.spec.ninfer3.text_config import DENSE_ARCHITECTURE, MOE_ARCHITECTURE
from weightfile.spec.ninfer3.text_names import (
    DIRECT_BF16,
    TEXT_PREFIX,
    TextParameter,
    attention_parameters,
    dense_ffn_parameters,
    is_moe,
    layer_prefix,
    moe_ffn_parameters,
)

MTP_COMPONENT = "mtp"
MTP_PREFIX = "mtp/"
#: The component MTP drafts for (spec/ninfer3.md §component `target`).
MTP_TARGET = "text"
#: text architecture -> the one architecture of the closed MTP config paired with it.
MTP_ARCHITECTURES: dict[str, str] = {
    DENSE_ARCHITECTURE: "Qwen3_5MTP",
    MOE_ARCHITECTURE: "Qwen3_5MoeMTP",
}
#: The only key of the closed MTP config.
MTP_CONFIG_KEYS: tuple[str, ...] = ("architectures",)
#: Where MTP reads the output head (and the proposal head): the MTP's final hidden state.
MTP_FINAL_HIDDEN = MTP_PREFIX + "final_hidden"
#: The one MTP layer; its parameters are a text full-attention layer's under this prefix.
MTP_LAYER_PREFIX = MTP_PREFIX + "layers/0/"

PROPOSAL_PREFIX = "proposal/"
PROPOSAL_HEAD = PROPOSAL_PREFIX + "head"
PROPOSAL_TOKEN_IDS = PROPOSAL_PREFIX + "token_ids"
PROPOSAL_IDS_FORMAT = "int32"


def mtp_config(moe: bool) -> dict[str, Any]:
    """`components.mtp.config` for a dense or MoE target: exactly `{architectures: [...]}`."""
    return {"architectures": [MTP_ARCHITECTURES[MOE_ARCHITECTURE if moe else DENSE_ARCHITECTURE]]}


def mtp_head_use() -> tuple[str, str]:
    """The one Use the component adds to a text parameter: (output head, mtp/final_hidden)."""
    return TEXT_PREFIX + "output_head", MTP_FINAL_HIDDEN


def _renamed(p: TextParameter) -> TextParameter:
    """Text layer 0's parameter under `mtp/layers/0/` (name and Use inputs)."""
    old = layer_prefix(0)
    return TextParameter(
        MTP_LAYER_PREFIX + p.name[len(old) :],
        p.shape,
        tuple(MTP_LAYER_PREFIX + i[len(old) :] for i in p.inputs),
        p.direct_format,
    )


def mtp_block_parameters(config: Mapping[str, Any]) -> list[TextParameter]:
    """The MTP block: input norm, gated full attention, post-attention norm, the text FFN form
    (dense SwiGLU or routed MoE with a shared expert), all as text layer 0 would name them."""
    h = config["hidden_size"]
    ffn = moe_ffn_parameters if is_moe(config) else dense_ffn_parameters
    text = [
        TextParameter(layer_prefix(0) + "input_norm", (h,), (), DIRECT_BF16),
        *attention_parameters(config, 0),
        TextParameter(layer_prefix(0) + "post_attention_norm", (h,), (), DIRECT_BF16),
        *ffn(config, 0),
    ]
    return [_renamed(p) for p in text]


def mtp_parameters(config: Mapping[str, Any]) -> list[TextParameter]:
    """Every MTP parameter for a validated text config (with attention keys)
    (spec/ninfer3.md §qwen35-mtp-names). The text embedding and output head are reused, not
    listed."""
    h = config["hidden_size"]
    m = MTP_PREFIX
    return [
        TextParameter(m + "input_projection", (h, 2 * h), (m + "stem_input",), None),
        TextParameter(m + "embedding_norm", (h,), (), DIRECT_BF16),
        TextParameter(m + "hidden_norm", (h,), (), DIRECT_BF16),
        *mtp_block_parameters(config),
        TextParameter(m + "final_norm", (h,), (), DIRECT_BF16),
    ]


def mtp_fusion_groups(config: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The official MTP packing: {query, key, gate, value} of the block in one parent."""
    a = MTP_LAYER_PREFIX + "attention/"
    return [tuple(a + r for r in ("query", "key", "gate", "value"))]


def proposal_parameters(rows: int, hidden: int, indexed: bool) -> list[TextParameter]:
    """`proposal/head` [rows, H] read at mtp/final_hidden; `proposal/token_ids` [rows] int32 when
    the domain is indexed (spec/ninfer3.md §component)."""
    out = [TextParameter(PROPOSAL_HEAD, (rows, hidden), (MTP_FINAL_HIDDEN,), None)]
    if indexed:
        out.append(TextParameter(PROPOSAL_TOKEN_IDS, (rows,), (), PROPOSAL_IDS_FORMAT))
    return out


__all__ = [
    "MTP_ARCHITECTURES",
    "MTP_COMPONENT",
    "MTP_CONFIG_KEYS",
    "MTP_FINAL_HIDDEN",
    "MTP_PREFIX",
    "PROPOSAL_HEAD",
    "PROPOSAL_TOKEN_IDS",
    "mtp_block_parameters",
    "mtp_config",
    "mtp_fusion_groups",
    "mtp_head_use",
    "mtp_parameters",
    "proposal_parameters",
]
