"""`ninfer3-mtp-model` rejections (ninfer3 v7): one rejected file per MTP and proposal-head binder
rule a file can break (`ninfer3.mtp.*`, `ninfer3.proposal.*`, spec/ninfer3.md
§qwen35-mtp-names), plus the component rules the mtp component adds
(`ninfer3.binder.component`: a file without one asked to decode speculatively;
`component_target`).

Each case is a small Qwen3.5 file (one full-attention layer 32 wide, vocab 8, the WordLevel
tokenizer of the words t0 … t7) with a seeded `mtp` component packed as conformance_mtp packs it
and an indexed proposal head of 4 rows, edited so that the container stays valid and the
reference stops at exactly that rule when it decodes speculatively; `invalid_cases` checks both,
and that the unedited file answers (with and without the proposal head). Left out:
`ninfer3.mtp.hadamard`, an `UnsupportedError` saying this reference lacks Hadamard signs on MTP
Uses, never a property of the file.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case
from weightfile.conformance.sections import published_section
from weightfile.ref.backend import REFERENCE
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.plan import TensorSpec
from weightfile.spec.errors import WeightfileError
from weightfile.spec.ninfer3.rules import RULES

from .conformance_files import (
    ATTENTION,
    CONTIGUOUS,
    GDN,
    RESOURCES,
    Layout,
    TextDirectory,
    parameters,
    seeded_value,
    text_config,
    text_directory,
    word_level_tokenizer,
)
from .conformance_mtp import MODEL_NAME, answer
from .conformance_mutations import edit_use
from .mtp_files import bind_mtp, bind_proposal, mtp_values

Edit = Callable[[TextDirectory], None]
SEED = 8
PROMPT = (3, 5, 2, 6)
#: the proposal head's rows: token ids inside the public domain [0, 8)
IDS = (5, 2, 7, 0)
M0 = "mtp/layers/0/"
FFN = {"intermediate_size": 8}
TEXT = text_config(32, 8, [ATTENTION], FFN, attention=(2, 1, 16))
RESOURCES_8 = {**RESOURCES, "tokenizer.json": word_level_tokenizer(8)}


def tensor_of(d: TextDirectory) -> Callable[[str, np.ndarray, str | None], None]:
    return lambda oid, values, fmt: d.tensor(oid, values, fmt or "bf16")


def ids_object(d: TextDirectory) -> Callable[[str, np.ndarray], None]:
    def store(oid: str, ids: np.ndarray) -> None:
        shape = tuple(int(n) for n in ids.shape)
        blob = get_codec("int32", CONTIGUOUS).encode(ids, shape)
        d.objects[oid] = (TensorSpec(oid, shape, "int32", CONTIGUOUS), blob)

    return store


def directory() -> TextDirectory:
    """The unedited file: `TEXT` in bf16, its MTP component and the 4-row proposal head."""
    params = parameters(TEXT, SEED)
    d = text_directory(TEXT, params, Layout("bf16"), RESOURCES_8)
    d.others["mtp"] = bind_mtp(TEXT, mtp_values(TEXT, seeded_value, SEED), tensor_of(d),
                               d.bindings, d.uses)  # fmt: skip
    head = params["text/output_head"][list(IDS)]
    d.proposal = bind_proposal(head, np.array(IDS), tensor_of(d), ids_object(d), d.bindings,
                               d.uses)  # fmt: skip
    return d


def mtp_config(value: dict[str, Any]) -> Edit:
    return lambda d: d.others["mtp"].__setitem__("config", value)


def drop_use(parameter: str, consumed: str | None = None) -> Edit:
    def edit(d: TextDirectory) -> None:
        d.uses[:] = [
            u
            for u in d.uses
            if not (u["parameter"] == parameter and consumed in (None, u["input"]))
        ]

    return edit


def stray(name: str, object_id: str) -> Edit:
    return lambda d: d.bindings.__setitem__(name, {"object": object_id})


def norm_as_fp32(d: TextDirectory) -> None:
    name = "mtp/final_norm"
    d.tensor("m." + name, mtp_values(TEXT, seeded_value, SEED)[name], "fp32")


def token_ids(ids: tuple[int, ...]) -> Edit:
    return lambda d: ids_object(d)("p.ids", np.array(ids, dtype=np.int32))


def ids_as_bf16(d: TextDirectory) -> None:
    d.tensor("p.ids", np.array(IDS, dtype=np.float32), "bf16")


def rows(n: int) -> Edit:
    return lambda d: d.proposal.__setitem__("rows", n)  # type: ignore[union-attr]


def no_attention(d: TextDirectory) -> None:
    """An all-GDN text model (no attention keys) beside the same mtp component record."""
    config = text_config(32, 8, [GDN], FFN)
    plain = text_directory(config, parameters(config, SEED), Layout("bf16"), RESOURCES_8)
    plain.others["mtp"] = d.others["mtp"]
    d.__dict__.update(plain.__dict__)


def no_mtp(d: TextDirectory) -> None:
    """The text-only file (no mtp, no proposal head), asked to decode speculatively anyway."""
    d.others.clear()
    d.proposal = None
    d.objects = {k: v for k, v in d.objects.items() if not k.startswith(("m.", "p."))}
    d.bindings = {k: v for k, v in d.bindings.items() if not k.startswith(("mtp/", "proposal/"))}
    d.uses[:] = [u for u in d.uses if not u["parameter"].startswith(("mtp/", "proposal/"))]
    d.uses[:] = [u for u in d.uses if u["input"] != "mtp/final_hidden"]


def self_target(d: TextDirectory) -> None:
    d.others["mtp"]["target"] = "mtp"


#: rule -> (what the file does, edit)
MUTATIONS: dict[str, tuple[str, Edit]] = {
    "ninfer3.mtp.config": ("a second config member n",
                           mtp_config({"architectures": ["Qwen3_5MTP"], "n": 1})),
    "ninfer3.mtp.architecture": ("Qwen3_5MoeMTP beside Qwen3_5ForCausalLM",
                                 mtp_config({"architectures": ["Qwen3_5MoeMTP"]})),
    "ninfer3.mtp.attention": ("an all-GDN text model", no_attention),
    "ninfer3.mtp.unexpected_parameter": ("a binding mtp/layers/1/input_norm",
                                         stray("mtp/layers/1/input_norm", "m.mtp/final_norm")),
    "ninfer3.mtp.direct_format": ("mtp/final_norm stored as fp32", norm_as_fp32),
    "ninfer3.mtp.use_missing": ("mtp/input_projection has no Use",
                                drop_use("mtp/input_projection")),
    "ninfer3.mtp.use_policy": ("the MTP down projection's Use has no policy",
                               edit_use(M0 + "mlp/down", activation_policy=None)),
    "ninfer3.mtp.use_unexpected": ("the MTP down projection used at the FFN input",
                                   edit_use(M0 + "mlp/down", input=M0 + "ffn_input")),
    "ninfer3.proposal.rows": ("the proposal record says 3 rows, the head has 4", rows(3)),
    "ninfer3.proposal.format": ("proposal/token_ids stored as bf16", ids_as_bf16),
    "ninfer3.proposal.token_range": ("id 8 outside the tokenizer's ids 0 … 7",
                                     token_ids((5, 2, 8, 0))),
    "ninfer3.proposal.duplicate": ("id 5 twice", token_ids((5, 2, 5, 0))),
    "ninfer3.proposal.unexpected_parameter": ("a binding proposal/extra",
                                              stray("proposal/extra", "p.head")),
    "ninfer3.proposal.use_missing": ("proposal/head has no Use", drop_use("proposal/head")),
    "ninfer3.proposal.use_unexpected": ("proposal/head used at text/final_hidden",
                                        edit_use("proposal/head", input="text/final_hidden")),
    "ninfer3.binder.component": ("a file without mtp asked for drafts", no_mtp),
    "ninfer3.binder.component_target": ("mtp targets itself", self_target),
}  # fmt: skip


def fields(rule_id: str, meaning: str) -> dict[str, Any]:
    """The case.json members of one rejection: the accepted cases' members, then the rule."""
    rule = RULES[rule_id]
    proposal = "true" if rule_id.startswith("ninfer3.proposal.") else "false"
    return {
        "expect": "reject", "model": MODEL_NAME, "prompt": [str(t) for t in PROMPT],
        "new_tokens": "3", "draft_tokens": "2", "proposal": proposal, "numerics": "canonical",
        "rule": rule_id, "error_class": rule.error_class,
        "accepted": [{"rule": rule_id, "error_class": rule.error_class}],
        "section": published_section(rule), "description": f"{rule.meaning}: {meaning}",
    }  # fmt: skip


def rejected_by(folder: Path, case: dict[str, Any]) -> tuple[str, str] | None:
    """(error class, rule) the reference stops at, None when the case answers."""
    try:
        answer(REFERENCE, folder, case)
    except WeightfileError as exc:
        return exc.violation.error_class, exc.rule
    return None


def check_base(scratch: Path) -> None:
    """The unedited file answers with and without its proposal head (so each edit alone makes
    the rejection)."""
    folder = scratch / "base"
    folder.mkdir()
    directory().write(folder / MODEL_NAME, label="base")
    for rule_id in ("ninfer3.mtp.config", "ninfer3.proposal.rows"):
        want = answer(REFERENCE, folder, fields(rule_id, ""))
        if len(want["tokens"]) != 3 or not want["rounds"]:
            raise RuntimeError(f"the unedited MTP file answers {want}")


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One rejected MTP file per rule of `MUTATIONS`, each a valid container that the reference
    rejects with exactly its rule (answering the case as the adapter does)."""
    check_base(scratch)
    for rule_id, (meaning, edit) in sorted(MUTATIONS.items()):
        d = copy.deepcopy(directory())
        edit(d)
        folder = scratch / rule_id
        folder.mkdir()
        entry = d.write(folder / MODEL_NAME, label=rule_id)
        found_container = verify(entry)
        if found_container:
            raise RuntimeError(f"{rule_id}: the container is invalid: {found_container}")
        case = fields(rule_id, meaning)
        found = rejected_by(folder, case)
        if found != (RULES[rule_id].error_class, rule_id):
            raise RuntimeError(f"{rule_id}: the reference gives {found}")
        _, topic, name = rule_id.split(".")
        files = {MODEL_NAME: entry.read_bytes()}
        yield f"{prefix}/mtp-model/qwen35/reject-{topic}-{name}", case, files, None
