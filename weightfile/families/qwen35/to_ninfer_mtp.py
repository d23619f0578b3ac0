"""The `mtp` component and the proposal head of an imported Qwen3.5 file (spec/ninfer3.md
§qwen35-mtp-names, §qwen35-mtp-import).

The MTP weights of a Hugging Face Qwen3.5/3.6 checkpoint are `mtp.fc.weight` [H, 2H] (the input
projection, embedding half first), `mtp.pre_fc_norm_embedding.weight`,
`mtp.pre_fc_norm_hidden.weight`, `mtp.norm.weight` and one block `mtp.layers.0.*` named as a text
full-attention layer (dense `mlp.{gate,up,down}_proj`, or MoE experts per expert or fused, router
and shared expert); some exports put them under `model.mtp.`. transformers drops them on load;
this importer keeps them. The proposal head is gathered from the output head's rows of a
user-supplied frequency list (`proposal_ids`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.ninfer3.mtp_names import (
    MTP_PREFIX,
    PROPOSAL_HEAD,
    PROPOSAL_TOKEN_IDS,
    mtp_config,
    mtp_head_use,
    mtp_parameters,
    proposal_parameters,
)
from weightfile.spec.ninfer3.recipes import Recipe
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter, fusion_groups

from . import hf_names
from .to_ninfer_plan import (
    ACTIVATION_POLICY,
    BF16,
    CONTIGUOUS,
    MATRIX_FORMATS,
    Parent,
    object_id,
    recipe_parents,
)

MTP_TOP = {
    "input_projection": "fc.weight",
    "embedding_norm": "pre_fc_norm_embedding.weight",
    "hidden_norm": "pre_fc_norm_hidden.weight",
    "final_norm": "norm.weight",
}
HF_MTP_PREFIXES = ("mtp.", "model.mtp.")
MAX_IDS_BYTES = 64 << 20  # a frequency list longer than this is refused before it is read


def one_layer(config: Mapping[str, Any]) -> dict[str, Any]:
    """The text config seen as the MTP block's: one full-attention layer."""
    return dict(config) | {"num_hidden_layers": 1, "layer_types": [FULL_ATTENTION]}


def mtp_prefix(names: list[str]) -> str | None:
    """The checkpoint's MTP prefix (`mtp.` or `model.mtp.`), None when it has no MTP weights."""
    return next((p for p in HF_MTP_PREFIXES if any(n.startswith(p) for n in names)), None)


def mtp_source(config: Mapping[str, Any], prefix: str, name: str, fused: bool) -> hf_names.Source:
    """The checkpoint tensor of one `mtp/` parameter (the block's through the text mapping)."""
    short = name.removeprefix(MTP_PREFIX)
    if short in MTP_TOP:
        return hf_names.Source(prefix + MTP_TOP[short], hf_names.unchanged)
    text_name = TEXT_PREFIX + short  # mtp/layers/0/... -> text/layers/0/...
    return hf_names.source(one_layer(config), prefix, text_name, fused_experts=fused)


@dataclass
class MtpPart:
    """What the MTP component adds to the file (nothing for a checkpoint without it)."""

    component: dict[str, Any] | None = None
    parents: list[Parent] = field(default_factory=list)
    expected: set[str] = field(default_factory=set)
    uses: list[dict[str, str]] = field(default_factory=list)
    prefix: str = ""
    fused: bool = False


def plan_mtp(
    config: Mapping[str, Any],
    hf_text: Mapping[str, Any],
    names: list[str],
    fmt: str | None,
    recipe: Recipe | None,
) -> MtpPart:
    """The `mtp` component of a checkpoint with `mtp.*` tensors (spec/ninfer3.md
    §qwen35-mtp-import); more than one MTP layer is `qwen35.import.mtp`."""
    prefix = mtp_prefix(names)
    if prefix is None:
        return MtpPart()
    layers = {n[len(prefix) :].split(".")[1] for n in names if n.startswith(prefix + "layers.")}
    count = hf_text.get("mtp_num_hidden_layers", len(layers))
    if count != 1 or layers != {"0"}:
        raise UnsupportedError(
            "qwen35.import.mtp",
            f"{count} MTP layer(s) {sorted(layers)} (one, mtp.layers.0, is supported)",
            path="mtp_num_hidden_layers",
        )
    params = mtp_parameters(config)
    fused = prefix + "layers.0." + hf_names.FUSED_GATE_UP in set(names)
    parents = mtp_parents(config, params, fmt, recipe)
    moe = "num_experts" in config
    uses = [
        {"parameter": p.name, "input": i, "activation_policy": ACTIVATION_POLICY}
        for p in params
        for i in p.inputs
    ]
    head, at = mtp_head_use()
    uses.append({"parameter": head, "input": at, "activation_policy": ACTIVATION_POLICY})
    expected = {mtp_source(config, prefix, p.name, fused).hf_name for p in params}
    component = {"config": mtp_config(moe), "target": "text"}
    return MtpPart(component, parents, expected, uses, prefix, fused)


def mtp_parents(
    config: Mapping[str, Any], params: list[TextParameter], fmt: str | None, recipe: Recipe | None
) -> list[Parent]:
    """The recipe's parents, or the default groupings with `fmt` (bf16) for every matrix."""
    if recipe is not None:
        return recipe_parents(params, recipe, fmt, object_id)
    by_name = {p.name: p for p in params}
    member_of: dict[str, tuple[str, ...]] = {}
    for g in fusion_groups(one_layer(config), 0):
        renamed = tuple(n.replace(TEXT_PREFIX, MTP_PREFIX, 1) for n in g)
        if not any(n in member_of for n in renamed):
            member_of |= dict.fromkeys(renamed, renamed)
    chosen = fmt or BF16
    out, placed = [], set()
    for p in params:
        if p.name in placed:
            continue
        names = member_of.get(p.name, (p.name,))
        pfmt, layout = (
            (p.direct_format or BF16, CONTIGUOUS)
            if p.is_direct
            else (chosen, MATRIX_FORMATS[chosen])
        )
        out.append(Parent(object_id(names), tuple(by_name[n] for n in names), pfmt, layout))
        placed.update(names)
    return out


def mtp_values(
    part: MtpPart, config: Mapping[str, Any], parent: Parent, tensor: Callable[[str], np.ndarray]
) -> np.ndarray:
    """The members' float32 values stacked by rows."""
    cache: dict[str, np.ndarray] = {}

    def cached(name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = tensor(name)
        return cache[name]

    parts = [
        hf_names.parameter_values(
            m, mtp_source(config, part.prefix, m.name, part.fused), cached, "qwen35.import.shape"
        )
        for m in parent.members
    ]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


# ---- the proposal head ------------------------------------------------------------------------


def proposal_error(detail: str, path: str, offset: int | None = None) -> InvalidError:
    return InvalidError("qwen35.import.proposal", detail, path=path, offset=offset)


def tokenizer_ids(tokenizer_json: bytes) -> tuple[int, list[int]]:
    """(how many ids the tokenizer addresses, its special ids) from `tokenizer.json`: the model
    vocabulary and the added tokens, those marked special being the specials."""
    import json

    try:
        doc = json.loads(tokenizer_json)
        vocab = doc.get("model", {}).get("vocab") or {}
        added = doc.get("added_tokens") or []
        ids = [int(v) for v in (vocab.values() if isinstance(vocab, dict) else [])]
        ids += [int(t["id"]) for t in added]
        specials = sorted({int(t["id"]) for t in added if t.get("special")})
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise proposal_error(f"tokenizer.json: {exc}", "tokenizer.json") from None
    if not ids:
        raise proposal_error("tokenizer.json addresses no ids", "tokenizer.json")
    return max(ids) + 1, specials


def read_frequency_ids(path: Path, domain: int) -> list[int]:
    """The ids of a frequency list: one decimal id per line, most frequent first, each below
    `domain` and none twice (`qwen35.import.proposal` with the line and byte offset)."""
    try:
        size = path.stat().st_size
        if not path.is_file() or size > MAX_IDS_BYTES:
            raise proposal_error(f"{path} is not a regular file of at most {MAX_IDS_BYTES} bytes",
                                 str(path))  # fmt: skip
        data = path.read_bytes()
    except OSError as exc:
        raise proposal_error(f"{path}: {exc.strerror}", str(path)) from None
    ids, seen, offset = [], set(), 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline
    for number, line in enumerate(lines, 1):
        where = f"{path.name}:{number}"
        text = line.strip(b" \t\r")
        if not text.isdigit() or len(text) > 12:
            raise proposal_error(f"line {number} is not one decimal id: {line[:40]!r}", where,
                                 offset)  # fmt: skip
        value = int(text)
        if value >= domain:
            raise proposal_error(f"id {value} is outside the tokenizer's {domain} ids", where,
                                 offset)  # fmt: skip
        if value in seen:
            raise proposal_error(f"id {value} is listed twice", where, offset)
        seen.add(value)
        ids.append(value)
        offset += len(line) + 1
    return ids


def select_rows(ids: list[int], specials: list[int], rows: int, vocab: int) -> np.ndarray:
    """The `rows` ids of the proposal head: the most frequent first, every special included
    (those the list does not reach follow, ascending); int32 [rows]."""
    if not 1 <= rows <= vocab or rows < len(specials):
        raise proposal_error(
            f"--proposal-rows {rows} must be in [{max(1, len(specials))}, {vocab}] "
            f"({len(specials)} special ids are always included)",
            "proposal_rows",
        )
    special = set(specials)
    budget = rows - len(special)
    chosen: list[int] = []
    for t in ids:
        if t in special:
            chosen.append(t)
        elif budget > 0:
            chosen.append(t)
            budget -= 1
        if budget == 0 and special <= set(chosen):
            break
    chosen += sorted(special - set(chosen))
    if len(chosen) != rows:
        raise proposal_error(
            f"the list has {len(ids)} ids; {rows} rows need {rows - len(special)} non-special",
            "proposal_ids",
        )
    return np.array(chosen, dtype=np.int32)


@dataclass
class ProposalPart:
    """The proposal head: its token ids, parents, bindings and Use (rows 0: none)."""

    token_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    parents: list[Parent] = field(default_factory=list)
    uses: list[dict[str, str]] = field(default_factory=list)

    @property
    def record(self) -> dict[str, Any] | None:
        n = int(self.token_ids.size)
        return {"domain": "indexed", "rows": n} if n else None


def plan_proposal(
    token_ids: np.ndarray, hidden: int, head_format: str, recipe: Recipe | None
) -> ProposalPart:
    """`proposal/head` (the recipe's format, else the output head's) and `proposal/token_ids`."""
    params = proposal_parameters(int(token_ids.size), hidden, indexed=True)
    if recipe is not None:
        parents = recipe_parents(params, recipe, None, object_id)
    else:
        head, ids = params
        parents = [
            Parent(object_id((head.name,)), (head,), head_format, MATRIX_FORMATS[head_format]),
            Parent(object_id((ids.name,)), (ids,), "int32", CONTIGUOUS),
        ]
    use = {"parameter": PROPOSAL_HEAD, "input": params[0].inputs[0],
           "activation_policy": ACTIVATION_POLICY}  # fmt: skip
    return ProposalPart(token_ids, parents, [use])


def proposal_values(part: ProposalPart, parent: Parent, head: Callable[[], np.ndarray]) -> Any:
    """The head's gathered rows (float32) or the token ids (int32)."""
    if parent.members[0].name == PROPOSAL_TOKEN_IDS:
        return part.token_ids
    return np.ascontiguousarray(head()[part.token_ids], dtype=np.float32)
