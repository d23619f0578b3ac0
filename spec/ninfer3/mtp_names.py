"""The canonical parameter names of the Qwen3.5 MTP component and of the proposal head
(spec/ninfer3.md §qwen35-mtp-names, §qwen35-names).

`mtp_parameters(config)` lists every parameter of the `mtp` component for a text config (the
closed spec/ninfer3.md §qwen35-config object): the input projection `[H, 2H]` read at
`mtp/stem_input`, three norms `[H]`, and one full-attention block `mtp/layers/0/…` with a text
layer's sub-names, shapes and direct formats, its Use inputs under `mtp/layers/0/` (the target's
FFN: dense, or routed MoE with the shared expert). The component reuses `text/token_embedding`
and `text/output_head`; the head gets one more Use, at `mtp/final_hidden`.
`proposal_parameters(rows, hidden)` are the indexed proposal head's two root parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weightfile.spec.ninfer3.text_config import FULL_ATTENTION
from weightfile.spec.ninfer3.text_names import (
    DIRECT_BF16,
    TEXT_PREFIX,
    TextParameter,
    layer_parameters,
    layer_prefix,
)

MTP_COMPONENT = "mtp"
MTP_PREFIX = "mtp/"
MTP_TARGET = "text"
MTP_FINAL_HIDDEN = MTP_PREFIX + "final_hidden"
#: the component config, exactly (spec/ninfer3.md §qwen35-mtp-names)
MTP_ARCHITECTURES = {False: "Qwen3_5MTP", True: "Qwen3_5MoeMTP"}
PROPOSAL_HEAD = "proposal/head"
PROPOSAL_TOKEN_IDS = "proposal/token_ids"
DIRECT_INT32 = "int32"


def mtp_config(moe: bool) -> dict[str, Any]:
    """`components.mtp.config`: exactly `{architectures: [...]}`."""
    return {"architectures": [MTP_ARCHITECTURES[moe]]}


def _renamed(p: TextParameter, old: str, new: str) -> TextParameter:
    return TextParameter(
        p.name.replace(old, new, 1),
        p.shape,
        tuple(i.replace(old, new, 1) for i in p.inputs),
        p.direct_format,
    )


def mtp_parameters(config: Mapping[str, Any]) -> list[TextParameter]:
    """Every `mtp/` parameter, in the component's order: input projection, the two input norms,
    the block, the final norm."""
    h = config["hidden_size"]
    one_layer = dict(config) | {"layer_types": [FULL_ATTENTION]}
    block = [_renamed(p, layer_prefix(0), MTP_PREFIX + "layers/0/") for p in layer_parameters(
        one_layer, 0
    )]  # fmt: skip
    return [
        TextParameter(
            MTP_PREFIX + "input_projection", (h, 2 * h), (MTP_PREFIX + "stem_input",), None
        ),
        TextParameter(MTP_PREFIX + "embedding_norm", (h,), (), DIRECT_BF16),
        TextParameter(MTP_PREFIX + "hidden_norm", (h,), (), DIRECT_BF16),
        *block,
        TextParameter(MTP_PREFIX + "final_norm", (h,), (), DIRECT_BF16),
    ]


def mtp_head_use() -> tuple[str, str]:
    """The one Use the component adds to a text parameter: (output head, mtp/final_hidden)."""
    return TEXT_PREFIX + "output_head", MTP_FINAL_HIDDEN


def proposal_parameters(rows: int, hidden: int) -> list[TextParameter]:
    """`proposal/head` [rows, H] read at `mtp/final_hidden`; `proposal/token_ids` [rows] int32."""
    return [
        TextParameter(PROPOSAL_HEAD, (rows, hidden), (MTP_FINAL_HIDDEN,), None),
        TextParameter(PROPOSAL_TOKEN_IDS, (rows,), (), DIRECT_INT32),
    ]
