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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from weightfile.backends import ENGINES, backend_named
from weightfile.families.qwen3.board_conformance import answer as board_answer
from weightfile.families.qwen3.conformance import answer as model_answer
from weightfile.families.qwen3.conformance import fast_opener
from weightfile.families.qwen3_moe.conformance import answer as moe_answer
from weightfile.families.qwen3_vl.conformance import answer as vl_answer
from weightfile.families.qwen3_vl.conformance import fast_vl_model
from weightfile.families.qwen35.conformance import answer as qwen35_answer
from weightfile.ref.backend import Backend
from weightfile.ref.ninfer3.describe import verify as verify_ninfer3
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.spec.errors import Violation, WeightfileError

from .codec_cases import answer as codec_answer
from .ninfer3_describe import describe_ninfer3
from .vqf_describe import describe_vqf

#: Every case kind (`<format>-<kind>`), in the order the README documents them.
KINDS = (
    "vqf-container", "ninfer3-container", "vqf-codec", "ninfer3-codec", "vqf-model",
    "ninfer3-model", "vqf-protected", "vqf-board-model", "vqf-moe-model", "vqf-vl-model",
)  # fmt: skip
#: The engine's own variables that carry a protected case's keys (README, "Protected cases").
PASSPHRASE_VARIABLE = "VLLM_VQF_KEY"
SIGN_PUB_VARIABLE = "VLLM_VQF_SIGN_PUB"
#: Why `fast` answers `ninfer3-model` although weightfile has no fast Qwen3.5 forward pass.
FAST_NINFER3_MODEL = (
    "fast codecs bind the weights (bind_ninfer with codec_for=fast get_codec); the forward "
    "pass is the reference one (weightfile has no fast Qwen3.5 forward pass)"
)


#: Why `fast` answers `vqf-vl-model` with the reference while the family has no fast model.
FAST_VL_MODEL = (
    "the Qwen3-VL family has no fast model yet (weightfile/families/registry.py): the reference "
    "forward pass answers"
)


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
    if kind == "vqf-model":
        folder = Path(path)
        case = json.loads((folder / "case.json").read_text())
        result = model_answer(backend, folder, case)
        return Answer(0, json.dumps(result, indent=2) + "\n", "")
    if kind == "ninfer3-model":
        return ninfer3_model(Path(path), backend)
    if kind == "vqf-moe-model":  # spec/models.md §qwen3-moe-vqf-v3: the family's ref or fast
        # forward pass
        folder = Path(path)
        moe = moe_answer(backend, folder, json.loads((folder / "case.json").read_text()))
        return Answer(0, json.dumps(moe, indent=2) + "\n", "")
    if kind == "vqf-protected":
        return vqf_protected(path, backend)
    if kind == "vqf-board-model":  # the board profile on the engine asked for
        folder = Path(path)
        board = board_answer(folder, json.loads((folder / "case.json").read_text()), backend)
        return Answer(0, json.dumps(board, indent=2) + "\n", "")
    if kind == "vqf-vl-model":  # spec/models.md §qwen3-vl: images through the family's models
        folder = Path(path)
        vl = vl_answer(backend, folder, json.loads((folder / "case.json").read_text()))
        return Answer(0, json.dumps(vl, indent=2) + "\n", "")
    raise ValueError(f"unknown case kind {kind!r}; expected one of {KINDS}")


def ninfer3_container(path: str) -> Answer:
    """Open-time checks, then deferred object checks and volumes, as `verify` orders them."""
    found = verify_ninfer3(path)
    if found:
        return Answer(1, "", rejection(found[0]))
    with open_artifact(path) as artifact:
        return Answer(0, json.dumps(describe_ninfer3(artifact), indent=2) + "\n", "")


def ninfer3_model(folder: Path, backend: Backend) -> Answer:
    """Open and bind the Qwen3.5 file (a rejected file: the first rule broken), then run it."""
    case = json.loads((folder / "case.json").read_text())
    try:
        result = qwen35_answer(backend, folder, case)
    except WeightfileError as exc:
        return Answer(1, "", rejection(exc.violation))
    return Answer(0, json.dumps(result, indent=2) + "\n", "")


def codec_case(folder: Path, backend: Backend) -> Answer:
    """Encode values.bin (when given) and decode payload.bin with the engine's codec."""
    case = json.loads((folder / "case.json").read_text())
    values = (folder / case["values"]).read_bytes() if "values" in case else None
    payload = (folder / case["payload"]).read_bytes()
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


def notes(engine: str) -> dict[str, str]:
    """How `engine` answers kinds it answers in a way worth saying (the `kinds` reply's
    `notes`): `fast` runs ninfer3-model cases with the reference forward pass."""
    if engine != "fast":
        return {}
    said = {"ninfer3-model": FAST_NINFER3_MODEL}
    if (
        not fast_vl_model()
    ):  # until weightfile/families/registry.py's qwen3_vl row names a fast model
        said["vqf-vl-model"] = FAST_VL_MODEL
    return said


def unsupported(engine: str) -> dict[str, str]:
    """Kinds `engine` cannot answer here, and why (reported as the skip reason)."""
    if engine == "fast" and fast_opener() is None:
        why = "no C kernels (the fast forward pass needs them)"
        missing = {"vqf-model": why, "vqf-moe-model": why}
        if fast_vl_model():  # a fast VL model needs the kernels too; the reference does not
            missing["vqf-vl-model"] = why
        return missing
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
