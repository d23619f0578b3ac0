"""`ninfer3-model` cases: tiny Qwen3.5 text `.ninfer` files + a prompt -> greedy tokens, logits
and per-trace-name activation digests (conformance/README.md, "Model cases"), and one rejected
file per `ninfer3.text.*` / `ninfer3.binder.*` rule a file can break.

The file's family comes from the family registry (weightfile.families.ninfer_family). Expected
answers come from its reference binder (ref/qwen35/bind.py) and forward pass (ref/qwen35/model.py)
under the canonical numerics; the trace names are its table's (spec/models.md §qwen35-trace). The
family has no fast forward pass: the `fast` engine binds with the fast codecs (`codec_for=fast
get_codec`, as weightfile/frontend/ninfer_session.py does) and runs the reference forward pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.sections import published_section
from weightfile.families import Family, ninfer_family
from weightfile.families.qwen3.conformance import run
from weightfile.families.qwen35.conformance_files import (
    RESOURCES_V2,
    WIDE_UNTIED,
    Layout,
    TextDirectory,
    config_json,
    hadamard_uses,
    parameters,
    text_directory,
    word_level_tokenizer,
)
from weightfile.families.qwen35.conformance_mutations import BASES, MUTATIONS
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.errors import Violation, WeightfileError
from weightfile.spec.ninfer3.rules import RULES

MODEL_NAME = "model.ninfer"
#: Why engine `fast` answers `ninfer3-model` although weightfile has no fast Qwen3.5 forward pass
#: (the built-in adapter's `kinds` notes, conformance/README.md "Running"; the row's builders
#: name it).
FAST_NINFER3_MODEL = (
    "fast codecs bind the weights (bind_ninfer with codec_for=fast get_codec); the forward "
    "pass is the reference one (weightfile has no fast Qwen3.5 forward pass)"
)


@dataclass(frozen=True, slots=True)
class Qwen35Case:
    name: str
    meaning: str
    moe: bool
    layout: Layout
    seed: int
    prompt: tuple[int, ...]
    new_tokens: int


CASES = (
    Qwen35Case("dense-bf16", "dense FFN, every matrix a whole bf16 object", False,
               Layout("bf16"), 1, (3, 14, 15, 9, 2), 3),
    Qwen35Case("dense-q4-q8-fused", "dense FFN, §6.2 fusion-group parents in q4_g64_fp16 bound "
               "by parts, the other matrices q8_g32_fp16", False,
               Layout("q8_g32_fp16", fused="q4_g64_fp16"), 2, (60, 0, 33, 7), 3),
    Qwen35Case("moe-q8-fused", "MoE FFN (4 experts, top 2, shared expert), parents and "
               "matrices q8_g32_fp16", True, Layout("q8_g32_fp16", fused="q8_g32_fp16"), 3,
               (5, 41, 5), 2),
)  # fmt: skip


def open_model(entry: Path, backend: Backend) -> tuple[Family, Any]:
    """Container checks (open + every deferred check), then the family's bind, as one load:
    (the family, its reference model)."""
    with open_artifact(entry) as nf:
        family = ninfer_family(nf)
        return family, family.reference_model(nf, codec_for=backend.ninfer_codecs.get_codec)


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The model answer; a file the binder rejects raises its typed error (the adapter turns
    it into the protocol's rejection)."""
    family, model = open_model(folder / case["model"], backend)
    names = family.trace_names(model.config)
    return run(model, [int(t) for t in case["prompt"]], int(case["new_tokens"]), names)


def case_answer(backend: Backend, folder: Path) -> dict[str, Any] | Violation:
    """The built-in adapter's answer to a `ninfer3-model` case folder: `answer` on its case.json,
    or the first rule a rejected file breaks (the protocol's rejection, conformance/README.md,
    "Protocol"; the row's builder names it)."""
    case = read_case(folder)
    try:
        return answer(backend, folder, case)
    except WeightfileError as exc:
        return exc.violation


def valid_cases(
    scratch: Path, prefix: str, resources: dict[str, bytes] | None = None
) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every accepted Qwen3.5 model case;
    `resources` replaces the v1 resource set (ninfer3 v2: a loadable tokenizer)."""
    for case in CASES:
        config = config_json(case.moe)
        params = parameters(config, case.seed)
        directory = text_directory(config, params, case.layout, resources)
        entry = directory.write(scratch / f"{case.name}.ninfer")
        found = verify(entry)
        if found:
            raise RuntimeError(f"model case {case.name} is invalid: {[str(v) for v in found]}")
        fields = {"expect": "accept", "model": MODEL_NAME,
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "canonical", "description": case.meaning}  # fmt: skip
        want = answer(REFERENCE, scratch, {**fields, "model": entry.name})
        yield f"{prefix}/model/qwen35/{case.name}", fields, {MODEL_NAME: entry.read_bytes()}, want


def accepted_case(
    scratch: Path, prefix: str, name: str, meaning: str, directory: TextDirectory,
    prompt: tuple[int, ...], new_tokens: int,
) -> Case:  # fmt: skip
    """One accepted model case: the file (checked valid), its case.json fields, the reference's
    answer."""
    entry = directory.write(scratch / f"{name}.ninfer")
    found = verify(entry)
    if found:
        raise RuntimeError(f"model case {name} is invalid: {[str(v) for v in found]}")
    fields = {"expect": "accept", "model": MODEL_NAME, "prompt": [str(t) for t in prompt],
              "new_tokens": str(new_tokens), "numerics": "canonical",
              "description": meaning}  # fmt: skip
    want = answer(REFERENCE, scratch, {**fields, "model": entry.name})
    return f"{prefix}/model/qwen35/{name}", fields, {MODEL_NAME: entry.read_bytes()}, want


def valid_cases_v2(scratch: Path, prefix: str) -> Iterator[Case]:
    """ninfer3 v2: the accepted model cases again, carrying `RESOURCES_V2` (CHANGELOG.md); then
    the Hadamard case (generator 5): a one-layer model 1024 wide whose attention, FFN gate/up
    and output head Uses carry hadamard_signs (spec/ninfer3.md §use, spec/numerics.md
    §hadamard)."""
    yield from valid_cases(scratch, prefix, RESOURCES_V2)
    resources = {**RESOURCES_V2, "tokenizer.json": word_level_tokenizer(WIDE_UNTIED["vocab_size"])}
    directory = text_directory(WIDE_UNTIED, parameters(WIDE_UNTIED, 4), Layout("bf16"), resources)
    hadamard_uses(directory)
    yield accepted_case(
        scratch, prefix, "wide-hadamard",
        "hidden 1024, one full-attention layer, bf16; hadamard_signs on the Uses at the mixer "
        "input, the FFN input (one signs object shared by six Uses) and the output head (another)",
        directory, (1, 6, 2, 7), 2,
    )  # fmt: skip


def rejection_of(entry: Path) -> tuple[str, str] | None:
    """(error class, rule) the reference binder rejects `entry` with, or None if it binds."""
    try:
        open_model(entry, REFERENCE)
    except WeightfileError as exc:
        return exc.violation.error_class, exc.rule
    return None


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One rejected model file per binder rule, each checked to be a valid container that the
    binder rejects with exactly its rule; the unedited files it starts from are checked to bind."""
    for base, directory in BASES.items():
        if rejection_of(directory().write(scratch / f"base-{base}.ninfer")) is not None:
            raise RuntimeError(f"the unedited {base} file does not bind")
    for rule_id, (meaning, base, edit) in sorted(MUTATIONS.items()):
        edited = BASES[base]()
        edit(edited)
        folder = scratch / rule_id
        folder.mkdir()
        entry = edited.write(folder / MODEL_NAME, label=rule_id)
        found_container = verify(entry)
        if found_container:
            raise RuntimeError(f"{rule_id}: the container is invalid: {found_container}")
        rule = RULES[rule_id]
        found = rejection_of(entry)
        if found != (rule.error_class, rule_id):
            raise RuntimeError(f"{rule_id}: the binder gives {found}")
        _, topic, name = rule_id.split(".")
        fields = {"expect": "reject", "model": MODEL_NAME, "prompt": ["0"], "new_tokens": "1",
                  "numerics": "canonical", "rule": rule_id, "error_class": rule.error_class,
                  "accepted": [{"rule": rule_id, "error_class": rule.error_class}],
                  "section": published_section(rule),
                  "description": f"{rule.meaning}: {meaning}"}  # fmt: skip
        files = {MODEL_NAME: entry.read_bytes()}
        yield f"{prefix}/model/qwen35/reject-{topic}-{name}", fields, files, None
