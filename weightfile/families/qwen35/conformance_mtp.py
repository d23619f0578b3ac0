"""`ninfer3-mtp-model` cases: tiny Qwen3.5 `.ninfer` files with an `mtp` component (one with an
indexed proposal head), a prompt and K -> every speculative round's draft tokens, draft-logit
bits and accepted count, and the generated tokens (conformance/README.md, "Qwen3.5 MTP model
cases"; spec/models.md §qwen35-mtp, §qwen35-mtp-round; spec/ninfer3.md §qwen35-mtp-names).

The files are the `ninfer3-model` cases' text (conformance_files, the loadable v2 tokenizer)
plus a seeded MTP component packed as the official converter packs it, pulled 90 % of the way
towards the always-agreeing pair (mtp_files.agreeing), so rounds accept full, partial and empty
prefixes. The answers come from the reference (ref.qwen35.mtp, ref.qwen35.speculative) under
the canonical numerics; engine `fast` answers with fast.qwen35.mtp.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance import seeded
from weightfile.conformance.case_types import Case, read_case
from weightfile.fast._native import library
from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.plan import TensorSpec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.speculative import Speculation
from weightfile.spec.errors import Violation, WeightfileError

from .conformance_files import (
    CONTIGUOUS,
    RESOURCES_V2,
    Layout,
    TextDirectory,
    config_json,
    parameters,
    seeded_value,
    text_directory,
)
from .mtp_files import agreeing, bind_mtp, bind_proposal, mtp_values

MODEL_NAME = "model.ninfer"
AGREE = 0.9


@dataclass(frozen=True, slots=True)
class MtpCase:
    name: str
    meaning: str
    moe: bool
    seed: int
    draft_tokens: int
    proposal_rows: int  # 0: drafting with the full output head
    prompt: tuple[int, ...]
    new_tokens: int


CASES = (
    MtpCase("dense-k1", "dense bf16 model, one draft per round", False, 6, 1, 0,
            (3, 17, 4, 9), 8),
    MtpCase("dense-k3", "the same file, three drafts per round", False, 6, 3, 0,
            (3, 17, 4, 9), 8),
    MtpCase("moe-k3", "MoE model (the MTP block's FFN routed with a shared expert), K = 3", True,
            7, 3, 0, (40, 2, 2, 51), 8),
    MtpCase("proposal-k3", "drafting with an indexed proposal head of 40 rows, K = 3", False, 6,
            3, 40, (3, 17, 4, 9), 8),
)  # fmt: skip


def proposal_ids(seed: int, rows: int, vocab: int) -> np.ndarray:
    """`rows` distinct ids: the vocabulary ordered by a seeded draw (the corpus's source)."""
    return np.argsort(seeded.uniform(seed * 1000 + 900, (vocab,)), kind="stable")[:rows]


def write_model(path: Path, case: MtpCase) -> Path:
    config = config_json(case.moe)
    params = parameters(config, case.seed)
    mtp = mtp_values(config, seeded_value, case.seed)
    agreeing(params, mtp, AGREE)
    d = text_directory(config, params, Layout("bf16"), RESOURCES_V2)

    def tensor(oid: str, values: np.ndarray, fmt: str | None) -> None:
        d.tensor(oid, values, fmt or "bf16")

    def ids_object(oid: str, ids: np.ndarray) -> None:
        shape = tuple(int(n) for n in ids.shape)
        blob = get_codec("int32", CONTIGUOUS).encode(ids, shape)
        d.objects[oid] = (TensorSpec(oid, shape, "int32", CONTIGUOUS), blob)

    d.others["mtp"] = bind_mtp(config, mtp, tensor, d.bindings, d.uses)
    if case.proposal_rows:
        ids = proposal_ids(case.seed, case.proposal_rows, config["vocab_size"])
        head = params["text/output_head"][ids]
        d.proposal = bind_proposal(head, ids, tensor, ids_object, d.bindings, d.uses)
    return checked(d, path, case.name)


def checked(d: TextDirectory, path: Path, label: str) -> Path:
    entry = d.write(path, label=label)
    found = verify(entry)
    if found:
        raise RuntimeError(f"mtp case {label} is invalid: {[str(v) for v in found]}")
    return entry


def speculation(backend: Backend, nf: Any, k: int, proposal: bool) -> Speculation:
    """The reference target and drafter, or the fast ones under engine fast."""
    from weightfile.families import ninfer_family

    family = ninfer_family(nf)
    if backend is FAST:
        if library() is None:
            raise RuntimeError("no C kernels")
        from weightfile.fast.qwen35.mtp import FastVerifier, open_mtp

        model = family.fast_model(nf, threads=1)
        return Speculation(FastVerifier(model), open_mtp(nf, model, proposal), k)
    from weightfile.ref.qwen35.mtp import RefVerifier, load_mtp

    ref = family.reference_model(nf, codec_for=backend.ninfer_codecs.get_codec)
    return Speculation(RefVerifier(ref), load_mtp(nf, ref, proposal, get_codec), k)


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The protocol's answer (README "Qwen3.5 MTP model cases")."""
    prompt = [int(t) for t in case["prompt"]]
    with open_artifact(folder / case["model"]) as nf:
        spec = speculation(backend, nf, int(case["draft_tokens"]), case["proposal"] == "true")
        tokens = list(spec.tokens(prompt, int(case["new_tokens"])))
    rounds = [
        {
            "draft_tokens": [str(t) for t in r.draft_tokens],
            "draft_logits": [
                [f"{w:08x}" for w in row.view(np.uint32).tolist()]
                for row in np.ascontiguousarray(r.draft_logits, dtype="<f4")
            ],
            "accepted": str(r.accepted),
        }
        for r in spec.rounds
    ]
    return {"tokens": [str(t) for t in tokens], "rounds": rounds}


def case_answer(backend: Backend, folder: Path) -> dict[str, Any] | Violation:
    """The built-in adapter's answer to a `ninfer3-mtp-model` case folder, or the first rule a
    rejected file breaks (ninfer3 v7; conformance/README.md, "Protocol")."""
    try:
        return answer(backend, folder, read_case(folder))
    except WeightfileError as exc:
        return exc.violation


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every Qwen3.5 MTP model case."""
    for case in CASES:
        folder = scratch / case.name
        folder.mkdir()
        entry = write_model(folder / MODEL_NAME, case)
        fields = {"expect": "accept", "model": MODEL_NAME,
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "draft_tokens": str(case.draft_tokens),
                  "proposal": "true" if case.proposal_rows else "false",
                  "numerics": "canonical", "description": case.meaning}  # fmt: skip
        want = answer(REFERENCE, folder, fields)
        yield (
            f"{prefix}/mtp-model/qwen35/{case.name}",
            fields,
            {MODEL_NAME: entry.read_bytes()},
            want,
        )
