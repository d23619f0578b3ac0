"""The `mtp` component and the proposal head of a Qwen3.5 `.ninfer` file: their checks and their
weights (spec/ninfer3.md §qwen35-mtp-names, spec/models.md §qwen35-mtp).

Two stages, as for vision, so a run without speculation reads no MTP payload:

1. `check_mtp(nf, text)` validates the MTP inventory from the directory alone (the component and
   its target, the closed config, every parameter's binding and direct format, no stray `mtp/`
   binding, the Uses, the output head's Use at `mtp/final_hidden`); `check_proposal(nf, text)`
   the proposal record's parameters, their rows, the ids' format, and (reading the small id
   vector) that the ids are distinct and public.
2. `mtp_weights(binding, decoder)` decodes the MTP parameters into `MtpWeights`: the block as a
   text `LayerWeights` (its FFN the text model's form), the input projection, the three norms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from weightfile.ref.ninfer3.bindings import ElementRange
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.records import Use
from weightfile.ref.ninfer3.require import require
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT
from weightfile.spec.ninfer3.mtp_names import (
    MTP_ARCHITECTURES,
    MTP_COMPONENT,
    MTP_FINAL_HIDDEN,
    MTP_LAYER_PREFIX,
    MTP_PREFIX,
    PROPOSAL_HEAD,
    PROPOSAL_IDS_FORMAT,
    PROPOSAL_PREFIX,
    PROPOSAL_TOKEN_IDS,
    mtp_parameters,
    proposal_parameters,
)
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION
from weightfile.spec.ninfer3.text_names import TextParameter, layer_prefix

from .bind import DIRECT_LAYOUT, OUTPUT_HEAD, ObjectDecoder, resolve
from .config import Qwen35Config, validate_text_config
from .weights import Arranger, LayerWeights, Linear

CONFIG_PATH = f"components.{MTP_COMPONENT}.config"
#: area -> (stray binding, Use missing, Use at another input): the rule ids of each check.
AREA_RULES: dict[str, tuple[str, str, str]] = {
    "mtp": (
        "ninfer3.mtp.unexpected_parameter",
        "ninfer3.mtp.use_missing",
        "ninfer3.mtp.use_unexpected",
    ),
    "proposal": (
        "ninfer3.proposal.unexpected_parameter",
        "ninfer3.proposal.use_missing",
        "ninfer3.proposal.use_unexpected",
    ),
}


def has_mtp(nf: Artifact) -> bool:
    return MTP_COMPONENT in nf.directory.components


@dataclass(frozen=True)
class MtpBinding:
    """A checked MTP component: the block's one-layer config, each parameter's element ranges."""

    block_config: Qwen35Config
    params: Mapping[str, TextParameter]
    ranges: Mapping[str, list[ElementRange]]


@dataclass(frozen=True)
class MtpWeights:
    """spec/models.md §qwen35-mtp: [H, 2H] projection, three zero-centred norms, one block."""

    input_projection: Linear
    embedding_norm: np.ndarray
    hidden_norm: np.ndarray
    final_norm: np.ndarray
    block: LayerWeights


def block_config(text: Qwen35Config) -> Qwen35Config:
    """The text config with one full-attention layer: the MTP block's geometry (its attention
    keys, FFN form, eps and rope are the text model's)."""
    doc = dict(text.json)
    doc["num_hidden_layers"] = 1
    doc["layer_types"] = [FULL_ATTENTION]
    return validate_text_config(doc)


def check_config(nf: Artifact, text: Qwen35Config) -> None:
    """The closed config: exactly {architectures: [the text architecture's MTP pair]}, and a text
    config with attention keys (the block is a full-attention layer)."""
    config = nf.component(MTP_COMPONENT).config  # present, targets text
    want = MTP_ARCHITECTURES[text.architectures[0]]
    arch = config.get("architectures") if isinstance(config, dict) else None
    require(
        isinstance(config, dict) and set(config) == {"architectures"} and isinstance(arch, list)
        and len(arch) == 1 and isinstance(arch[0], str),
        "ninfer3.mtp.config",
        f"MTP config {json.dumps(config)[:60]} is not {{architectures: [name]}}",
        CONFIG_PATH,
    )  # fmt: skip
    require(
        arch == [want],
        "ninfer3.mtp.architecture",
        f"{arch[0]!r:.40} beside {text.architectures[0]} (wants {want})",
        f"{CONFIG_PATH}.architectures[0]",
    )
    require(
        text.head_dim is not None,
        "ninfer3.mtp.attention",
        "the MTP block is full attention, the text config has no attention keys",
        f"components.{TEXT_COMPONENT}.config",
    )


def check_use(nf: Artifact, use: Use, p: TextParameter, area: str) -> None:
    """An MTP or proposal Use: a declared input, a policy (MTP), valid auxiliaries, no signs."""
    require(
        use.input in p.inputs,
        AREA_RULES[area][2],
        f"{use.parameter} is not consumed at {use.input!r}",
        f"uses[{use.index}].input",
    )
    require(
        use.activation_policy is not None,
        "ninfer3.mtp.use_policy",
        f"{use.parameter} at {use.input} has no activation_policy",
        f"uses[{use.index}]",
    )
    nf.activation_divisor(use)
    if nf.hadamard_signs(use, p.shape) is not None:
        raise UnsupportedError(
            "ninfer3.mtp.hadamard",
            f"{use.parameter} at {use.input} uses hadamard_signs, which MTP drafting lacks",
            path=f"uses[{use.index}].auxiliaries",
        )


def check_uses(nf: Artifact, params: Mapping[str, TextParameter], area: str) -> None:
    """Every declared input has a Use; no Use of these parameters names another input."""
    for use in nf.directory.uses:
        if use.parameter in params:
            check_use(nf, use, params[use.parameter], area)
    declared = {(u.parameter, u.input) for u in nf.directory.uses}
    for p in params.values():
        for consumed in p.inputs:
            require(
                (p.name, consumed) in declared,
                AREA_RULES[area][1],
                f"{p.name} has no Use at {consumed}",
                "uses",
            )


def check_stray(nf: Artifact, prefix: str, params: Mapping[str, TextParameter], area: str) -> None:
    for name, binding in nf.directory.bindings.items():
        require(
            not name.startswith(prefix) or name in params,
            AREA_RULES[area][0],
            f"binding {name!r} is no {area} parameter of this file",
            binding.path,
        )


def check_mtp(nf: Artifact, text: Qwen35Config) -> MtpBinding:
    """Stage 1 (module docstring): the whole MTP inventory, reading no tensor payload."""
    check_config(nf, text)
    params = {p.name: p for p in mtp_parameters(text.json)}
    ranges = {name: resolve(nf, p, "ninfer3.mtp.direct_format") for name, p in params.items()}
    check_stray(nf, MTP_PREFIX, params, "mtp")
    check_uses(nf, params, "mtp")
    require(
        any(u.parameter == OUTPUT_HEAD and u.input == MTP_FINAL_HIDDEN for u in nf.directory.uses),
        "ninfer3.mtp.use_missing",
        f"{OUTPUT_HEAD} has no Use at {MTP_FINAL_HIDDEN}",
        "uses",
    )
    return MtpBinding(block_config(text), params, ranges)


def mtp_weights(b: MtpBinding, decoder: ObjectDecoder) -> MtpWeights:
    """Stage 2: every MTP parameter decoded to float32; the block arranged as text layer 0."""
    values = {n: decoder.parameter(b.ranges[n], p.shape) for n, p in b.params.items()}
    text0 = layer_prefix(0)
    as_text = {
        (text0 + n[len(MTP_LAYER_PREFIX) :] if n.startswith(MTP_LAYER_PREFIX) else n): v
        for n, v in values.items()
    }
    return arrange(b.block_config, as_text)


def arrange(config: Qwen35Config, params: Mapping[str, object], **hooks) -> MtpWeights:
    """MtpWeights from the parameters with the block named as text layer 0 (`hooks`: the
    `Arranger`'s matrix / rotated hooks, for the fast family's in-place matrices)."""
    a = Arranger(config, params, {}, hooks.get("matrix"), hooks.get("rotated"))
    m = MTP_PREFIX
    return MtpWeights(
        a.mat(m + "input_projection"),
        a.f32(m + "embedding_norm"),
        a.f32(m + "hidden_norm"),
        a.f32(m + "final_norm"),
        a.layer(0, FULL_ATTENTION),
    )


# -- the proposal head (spec/ninfer3.md §component, §qwen35-mtp-names) --------------------------


@dataclass(frozen=True)
class ProposalBinding:
    """A checked proposal head: its rows' token ids (None for the full domain: row = id)."""

    head: TextParameter
    ranges: list[ElementRange]
    token_ids: np.ndarray | None


def public_tokens(nf: Artifact, text: Qwen35Config) -> int:
    """The public token domain [0, N): N is one more than the largest id the tokenizer.json
    resource addresses (model vocabulary and added tokens), capped at the head's rows; the head's
    rows when the tokenizer addresses no id."""
    doc = json.loads(bytes(nf.resource("tokenizer.json")))
    vocab = (doc.get("model") or {}).get("vocab") or {}
    ids = [v for v in (vocab.values() if isinstance(vocab, dict) else []) if type(v) is int]
    ids += [t.get("id") for t in doc.get("added_tokens") or [] if type(t.get("id")) is int]
    return min(text.vocab_size, max(ids) + 1) if ids else text.vocab_size


def proposal_rows(nf: Artifact, name: str, rows: int, path: str) -> None:
    """A whole-object binding's object has `rows` rows, else `ninfer3.proposal.rows`."""
    b = nf.directory.bindings.get(name)
    o = nf.directory.objects_by_id.get(b.object_id or "") if b is not None else None
    if o is not None and o.shape:
        require(
            o.shape[0] == rows,
            "ninfer3.proposal.rows",
            f"{name} has {o.shape[0]} rows, the proposal record says {rows}",
            path,
        )


def read_token_ids(nf: Artifact, ranges: list[ElementRange], public: int) -> np.ndarray:
    """The int32 ids (contiguous_le_v1), checked distinct and inside [0, public)."""
    parts = []
    for r in ranges:
        o = nf.object(r.object_id)
        require(
            o.format == PROPOSAL_IDS_FORMAT and o.layout == DIRECT_LAYOUT,
            "ninfer3.proposal.format",
            f"{PROPOSAL_TOKEN_IDS} reads {o.id} as {o.format}/{o.layout}",
            nf.directory.bindings[PROPOSAL_TOKEN_IDS].path,
        )
        words = np.frombuffer(bytes(nf.object_bytes(o.id)), dtype="<i4")
        parts.append(words[r.begin : r.end])
    ids = np.concatenate(parts).astype(np.int64)
    path = nf.directory.bindings[PROPOSAL_TOKEN_IDS].path
    bad = np.flatnonzero((ids < 0) | (ids >= public))
    require(
        bad.size == 0, "ninfer3.proposal.token_range",
        f"row {bad[0] if bad.size else 0} holds id {ids[bad[0]] if bad.size else 0}, outside "
        f"[0, {public})", path,
    )  # fmt: skip
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    dup = np.flatnonzero(counts > 1)
    require(
        dup.size == 0, "ninfer3.proposal.duplicate",
        f"id {ids[first[dup[0]]] if dup.size else 0} appears twice", path,
    )  # fmt: skip
    return ids


def check_proposal(nf: Artifact, text: Qwen35Config) -> ProposalBinding | None:
    """The text component's proposal record and its parameters; None without one."""
    record = nf.directory.components[TEXT_COMPONENT].proposal
    indexed = record is not None and record.domain == "indexed"
    rows = (record.rows if indexed else text.vocab_size) if record is not None else 0
    params = {} if record is None else {
        p.name: p for p in proposal_parameters(int(rows), text.hidden_size, indexed)
    }  # fmt: skip
    check_stray(nf, PROPOSAL_PREFIX, params, "proposal")
    if record is None:
        return None
    path = f"components.{TEXT_COMPONENT}.proposal.rows"
    for name in params:
        proposal_rows(nf, name, int(rows), path)
    ranges = {n: resolve(nf, p, "ninfer3.proposal.format") for n, p in params.items()}
    check_uses(nf, {PROPOSAL_HEAD: params[PROPOSAL_HEAD]}, "proposal")
    ids = None
    if indexed:
        ids = read_token_ids(nf, ranges[PROPOSAL_TOKEN_IDS], public_tokens(nf, text))
    return ProposalBinding(params[PROPOSAL_HEAD], ranges[PROPOSAL_HEAD], ids)


__all__ = [
    "MtpBinding",
    "MtpWeights",
    "ProposalBinding",
    "check_mtp",
    "check_proposal",
    "has_mtp",
    "mtp_weights",
]
