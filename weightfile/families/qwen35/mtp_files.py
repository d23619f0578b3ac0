"""Seeded MTP components and proposal heads for `.ninfer` Qwen3.5 files written by this project
(the conformance cases, the bench's synthetic models, the tests' builders): the values, the
official packing, and the construction of a head that agrees with its target
(spec/models.md §qwen35-mtp "A head that always agrees").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from weightfile.spec.ninfer3.mtp_names import (
    MTP_ARCHITECTURES,
    MTP_FINAL_HIDDEN,
    PROPOSAL_HEAD,
    PROPOSAL_TOKEN_IDS,
    mtp_fusion_groups,
    mtp_parameters,
)

#: The output projections a head that agrees zeroes (the target's and the MTP block's).
OUTPUTS = ("attention/output", "gdn/output", "mlp/down", "/down")
A16 = "A16Only"


def agreeing(params: dict[str, np.ndarray], mtp: dict[str, np.ndarray], agree: float) -> None:
    """Pull (target, MTP) towards the always-agreeing pair, in place: every output projection
    scaled by 1 − agree (0 at agree = 1); at agree > 0 the MTP input projection [I 0], its
    embedding norm w = 0 and its final norm the text final norm."""
    if agree <= 0:
        return
    for group in (params, mtp):
        for name in group:
            if name.endswith(OUTPUTS):
                group[name] = (group[name] * np.float32(1 - agree)).astype(np.float32)
    h = mtp["mtp/embedding_norm"].shape[0]
    mtp["mtp/input_projection"] = np.concatenate(
        [np.eye(h, dtype=np.float32), np.zeros((h, h), np.float32)], axis=1
    )
    mtp["mtp/embedding_norm"] = np.zeros(h, np.float32)
    mtp["mtp/final_norm"] = np.array(params["text/final_norm"], dtype=np.float32)


def mtp_values(
    config: Mapping[str, Any], draw: Callable[[Any, int], np.ndarray], seed: int
) -> dict[str, np.ndarray]:
    """Every MTP parameter, parameter i drawn as `draw(parameter, seed * 1000 + 700 + i)`."""
    return {p.name: draw(p, seed * 1000 + 700 + i) for i, p in enumerate(mtp_parameters(config))}


def bind_mtp(
    config: Mapping[str, Any],
    values: Mapping[str, np.ndarray],
    tensor: Callable[[str, np.ndarray, str | None], None],
    bindings: dict[str, Any],
    uses: list[dict[str, Any]],
) -> dict[str, Any]:
    """The MTP parameters as the official converter packs them ({query, key, gate, value} one
    parent), `tensor(object id, values, format or None for a matrix)` storing each object, one
    A16Only Use per declared input plus the output head's at mtp/final_hidden; returns the
    component record."""
    (group,) = mtp_fusion_groups(config)
    for p in mtp_parameters(config):
        if p.name in group:
            if p.name == group[0]:
                tensor("m.fused", np.concatenate([values[n] for n in group]), None)
            at = sum(values[n].size for n in group[: group.index(p.name)])
            bindings[p.name] = {"parts": [{"object": "m.fused",
                                           "range": [at, at + values[p.name].size]}]}  # fmt: skip
        else:
            tensor("m." + p.name, values[p.name], p.direct_format)
            bindings[p.name] = {"object": "m." + p.name}
        uses += [{"parameter": p.name, "input": i, "activation_policy": A16} for i in p.inputs]
    uses.append({"parameter": "text/output_head", "input": MTP_FINAL_HIDDEN,
                 "activation_policy": A16})  # fmt: skip
    arch = MTP_ARCHITECTURES[config["architectures"][0]]
    return {"config": {"architectures": [arch]}, "target": "text"}


def bind_proposal(
    head: np.ndarray,
    token_ids: np.ndarray,
    tensor: Callable[[str, np.ndarray, str | None], None],
    ids_object: Callable[[str, np.ndarray], None],
    bindings: dict[str, Any],
    uses: list[dict[str, Any]],
) -> dict[str, Any]:
    """An indexed proposal head: `proposal/head` (a matrix, its Use at mtp/final_hidden) and
    `proposal/token_ids` int32; returns the text component's proposal record."""
    tensor("p.head", head, None)
    ids_object("p.ids", np.asarray(token_ids, dtype=np.int32))
    bindings[PROPOSAL_HEAD] = {"object": "p.head"}
    bindings[PROPOSAL_TOKEN_IDS] = {"object": "p.ids"}
    uses.append({"parameter": PROPOSAL_HEAD, "input": MTP_FINAL_HIDDEN, "activation_policy": A16})
    return {"domain": "indexed", "rows": int(head.shape[0])}
