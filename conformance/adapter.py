"""The built-in implementations `ref` and `fast`, speaking the conformance protocol.

    python -m weightfile.conformance.adapter --engine ref|fast KIND PATH
    python -m weightfile.conformance.adapter --engine ref|fast kinds

A valid file: the description as JSON on stdout, exit 0. A rejected file: one line
`ErrorClass: rule-id: message` on stderr, exit 1 (conformance/README.md, "Protocol"). For VQF the
loader chain of spec/vqf.md §loader-chain runs first (open_vqf), then the strict checks of
spec/vqf.md §strict-checks with the FNV trailer checked; for `.ninfer` the open-time checks of
spec/ninfer3.md §validation, then every object's deferred checks and every continuation volume
(weightfile has one `.ninfer` reader, so `fast` answers container cases with it too). The first
violation found is the one reported.

The format-level kinds (container, codec, protected) are declared here; the model kinds are the
family registry's conformance builders (weightfile/families/registry.py, `Builder`): each names
its kind, the function answering a case folder, its numerics and the note engine fast gives when
it answers with the reference, so a new family adds its kind in its row, not here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from weightfile.backends import ENGINES, backend_named
from weightfile.families import ROWS, Builder, Family, resolve
from weightfile.fast._native import library
from weightfile.ref.backend import Backend
from weightfile.ref.ninfer3.describe import verify as verify_ninfer3
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.spec.errors import Violation, WeightfileError
from weightfile.spec.numerics.profile import CANONICAL

from .codec_cases import answer as codec_answer
from .ninfer3_describe import describe_ninfer3
from .vqf_describe import describe_vqf

#: The format-level case kinds (`<format>-<kind>`), each with the corpus version that introduced
#: it; the model kinds are the family rows' builders (`model_kinds`).
FORMAT_KINDS: tuple[tuple[str, str], ...] = (
    ("vqf-container", "v1"), ("ninfer3-container", "v1"), ("vqf-codec", "v1"),
    ("ninfer3-codec", "v1"), ("vqf-protected", "v2"),
)  # fmt: skip
#: The engine's own variables that carry a protected case's keys (README, "Protected cases").
PASSPHRASE_VARIABLE = "VLLM_VQF_KEY"
SIGN_PUB_VARIABLE = "VLLM_VQF_SIGN_PUB"
#: Why engine fast cannot answer a canonical model kind whose row has a fast model, on a machine
#: without the C kernels (the skip reason; never silently the reference).
NO_KERNELS = "no C kernels (the fast forward pass needs them)"


@cache
def model_kinds() -> dict[str, tuple[Family, Builder]]:
    """`<format>-<kind>` -> (row, builder) of every family row's conformance builders, in row
    order, the first builder of a kind standing for it; the builders of one kind must agree on
    its answer, numerics and note, and no model kind may be a format-level one."""
    found: dict[str, tuple[Family, Builder]] = {}
    for row in ROWS:
        for b in row.builders:
            kind = f"{b.format}-{b.kind}"
            if kind in dict(FORMAT_KINDS):
                raise RuntimeError(f"the {row.name} row's builder claims the format kind {kind}")
            first_row, first = found.setdefault(kind, (row, b))
            if (first_row, first.answer, first.numerics, first.note) != how_answered(row, b):
                raise RuntimeError(f"the builders of {kind} disagree on how it is answered")
    return found


def how_answered(row: Family, b: Builder) -> tuple[Family, str, str, str | None]:
    """What the builders of one kind must agree on."""
    return row, b.answer, b.numerics, b.note


def introduced() -> dict[str, int]:
    """Every case kind -> the number of the first corpus version holding it (v1 -> 1), the
    format-level kinds first, then the rows' in registry order."""
    first = {kind: int(version.removeprefix("v")) for kind, version in FORMAT_KINDS}
    for row in ROWS:
        for b in row.builders:
            kind, number = f"{b.format}-{b.kind}", int(b.version.removeprefix("v"))
            first[kind] = min(first.get(kind, number), number)
    return first


def all_kinds() -> tuple[str, ...]:
    """Every case kind, in the order conformance/README.md ("Case kinds") documents them: the
    order they were published (by the corpus version that introduced them; within one version
    the format-level kinds, then the rows' in registry order)."""
    first = introduced()
    return tuple(sorted(first, key=first.__getitem__))


#: Every case kind (`<format>-<kind>`), in the order the README documents them.
KINDS = all_kinds()


@dataclass(frozen=True, slots=True)
class Answer:
    """What a protocol command produced: exit status, stdout and stderr."""

    status: int
    stdout: str
    stderr: str


def rejection(v: Violation) -> str:
    """The stderr line of a rejected file."""
    return f"{v.error_class}: {v.rule}: {v.detail}\n"


def answer(kind: str, path: str, engine: str) -> Answer:
    """Run `engine` on the case input at `path` as the protocol command would; the engine's
    name becomes its Backend here, once (weightfile/backends.py)."""
    backend = backend_named(engine)
    if kind == "vqf-container":
        return vqf_container(path, backend)
    if kind == "ninfer3-container":
        return ninfer3_container(path)
    if kind in ("vqf-codec", "ninfer3-codec"):
        return codec_case(Path(path), backend)
    if kind == "vqf-protected":
        return vqf_protected(path, backend)
    if kind in model_kinds():  # a family's model case: its row's builder says how
        _, builder = model_kinds()[kind]
        return model_case(Path(path), backend, builder)
    raise ValueError(f"unknown case kind {kind!r}; expected one of {KINDS}")


def ninfer3_container(path: str) -> Answer:
    """Open-time checks, then deferred object checks and volumes, as `verify` orders them."""
    found = verify_ninfer3(path)
    if found:
        return Answer(1, "", rejection(found[0]))
    with open_artifact(path) as artifact:
        return Answer(0, json.dumps(describe_ninfer3(artifact), indent=2) + "\n", "")


def model_case(folder: Path, backend: Backend, builder: Builder) -> Answer:
    """The builder's answer to the case folder: the answer as JSON, or a rejected file's first
    broken rule (conformance/README.md, "Protocol")."""
    result = resolve(builder.answer)(backend, folder)
    if isinstance(result, Violation):
        return Answer(1, "", rejection(result))
    return Answer(0, json.dumps(result, indent=2) + "\n", "")


def codec_case(folder: Path, backend: Backend) -> Answer:
    """Encode values.bin (when given) and decode payload.bin (when given) with the engine's
    codec; an encoder's refusal is a rejection (README, "Encoding that must fail")."""
    case = json.loads((folder / "case.json").read_text())
    values = (folder / case["values"]).read_bytes() if "values" in case else None
    payload = (folder / case["payload"]).read_bytes() if "payload" in case else None
    try:
        result = codec_answer(backend, case, values, payload)
    except WeightfileError as exc:
        return Answer(1, "", rejection(exc.violation))
    return Answer(0, json.dumps(result, indent=2) + "\n", "")


def vqf_container(path: str, backend: Backend) -> Answer:
    """The VQF loader chain, then the strict checks (the checksum by `backend`; both engines
    read with the one zero-copy reader, fast/vqf/read.py)."""
    try:
        vqf = open_vqf(path)  # the loader chain (spec/ninfer3.md §this-tree), tensor ranges
        # included
    except WeightfileError as exc:
        return Answer(1, "", rejection(exc.violation))
    with vqf:
        # spec/vqf.md §strict-checks and the trailer (spec/vqf.md §fnv-trailer)
        found = validate_vqf(path, checksum=True, backend=backend)
        if found:
            return Answer(1, "", rejection(found[0]))
        return Answer(0, json.dumps(describe_vqf(vqf), indent=2) + "\n", "")


def case_keys() -> tuple[bytes | None, bytes | None]:
    """(passphrase, trusted public key) from VLLM_VQF_KEY and VLLM_VQF_SIGN_PUB, as the runner
    sets them for a protected case; None for a variable that is absent or empty."""
    from weightfile.ref.vqf.protect import parse_public_key

    passphrase = os.environb.get(PASSPHRASE_VARIABLE.encode()) or None
    pub = os.environ.get(SIGN_PUB_VARIABLE)
    return passphrase, parse_public_key(pub) if pub else None


def vqf_protected(path: str, backend: Backend) -> Answer:
    """A protected container (spec/vqf.md §protected) with the case's keys: the loader chain with
    the tag checked before any plaintext is used, then the strict checks with the signature checked
    against the trusted key, then the description of the plaintext."""
    passphrase, trusted_pub = case_keys()
    try:
        vqf = open_vqf(path, passphrase=passphrase)
    except WeightfileError as exc:
        return Answer(1, "", rejection(exc.violation))
    with vqf:
        found = validate_vqf(
            path, checksum=True, passphrase=passphrase, trusted_pub=trusted_pub, backend=backend
        )
        if found:
            return Answer(1, "", rejection(found[0]))
        return Answer(0, json.dumps(describe_vqf(vqf), indent=2) + "\n", "")


def canonical_model_kinds() -> dict[str, Family]:
    """The model kinds under the canonical numerics, in KINDS order -> their row: engine fast
    answers them with the row's fast model or, in a row without one, with the reference (a kind
    under another profile binds that profile's models in its answer, weightfile/profiles.py)."""
    kinds = model_kinds()
    return {k: kinds[k][0] for k in KINDS if k in kinds and kinds[k][1].numerics == CANONICAL.name}


def notes(engine: str) -> dict[str, str]:
    """How `engine` answers kinds it answers in a way worth saying (the `kinds` reply's
    `notes`): `fast` answers a canonical model kind with the reference forward pass when its
    row has no fast model, and says so in the builder's note."""
    if engine != "fast":
        return {}
    said = {}
    for kind, row in canonical_model_kinds().items():
        note = model_kinds()[kind][1].note
        if not row.has_fast and note is not None:
            said[kind] = resolve(note)
    return said


def unsupported(engine: str) -> dict[str, str]:
    """Kinds `engine` cannot answer here, and why (reported as the skip reason): without the C
    kernels, `fast` cannot answer a canonical model kind whose row has a fast model (the
    reference does not stand in for it)."""
    if engine == "fast" and library() is None:
        return {kind: NO_KERNELS for kind, row in canonical_model_kinds().items() if row.has_fast}
    return {}


def supported_kinds(engine: str) -> tuple[str, ...]:
    """The case kinds `engine` answers (the `kinds` query of the protocol)."""
    missing = unsupported(engine)
    return tuple(k for k in KINDS if k not in missing)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weightfile.conformance.adapter")
    parser.add_argument("--engine", choices=ENGINES, default="ref")
    parser.add_argument("kind", help="a case kind, or `kinds` to list the kinds answered")
    parser.add_argument("path", nargs="?")
    args = parser.parse_args(argv)
    if args.kind == "kinds":
        doc: dict[str, object] = {"kinds": list(supported_kinds(args.engine))}
        if unsupported(args.engine):
            doc["unsupported"] = unsupported(args.engine)
        if notes(args.engine):
            doc["notes"] = notes(args.engine)
        print(json.dumps(doc))
        return 0
    if args.path is None:
        parser.error("a case kind needs a path")
    result = answer(args.kind, args.path, args.engine)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.status


if __name__ == "__main__":
    sys.exit(main())
