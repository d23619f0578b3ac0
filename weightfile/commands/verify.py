"""`weightfile verify FILE [--checksum]`: every rule violation, exit 0 only when valid.

Exit status: 0 valid; 1 at least one violation; 3 valid as far as checked, but part of the file
could not be verified: an encrypted file without its passphrase, a signed file without a trusted
public key (spec/vqf.md §protected) — never reported as valid.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from weightfile.backends import ENGINES, backend_named
from weightfile.formats import sniff
from weightfile.spec.errors import WeightfileError

from ._common import (
    EXIT_UNVERIFIABLE,
    add_file_argument,
    add_passphrase_argument,
    add_sign_pub_argument,
    passphrase,
    resolve_file,
    trusted_pub,
)

EXIT_UNSUPPORTED = EXIT_UNVERIFIABLE  # the name older callers import


def register(sub: Any) -> None:
    parser = sub.add_parser("verify", help="check a file against every rule of its spec")
    add_file_argument(parser)
    parser.add_argument(
        "--checksum", action="store_true", help="also hash the file (FNV-1a-64 for VQF)"
    )
    parser.add_argument("--engine", choices=ENGINES, default="fast", help="checksum implementation")
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON document ("schema": "weightfile.verify/1") instead of lines',
    )
    add_passphrase_argument(parser)
    add_sign_pub_argument(parser)
    parser.add_argument(
        "--engine-defaults",
        action="store_true",
        help="VQF: also say whether the board engine with default settings loads the file, and "
        "which settings it needs if not (exit 1 when no default engine loads it; §9.2), and "
        "name each known engine defect the file's geometry triggers (vqf.defect.*)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = resolve_file("verify", args)
    # sniff raises format.magic for a file no magic or extension places, as weightfile.open does
    kind = sniff(path)
    if kind == "vqf":
        violations = verify_vqf(path, args)
    else:
        from weightfile.model_file import validate

        violations = validate(path)
    status = verdict(violations)
    if getattr(args, "json", False):
        print(json.dumps(json_document(path, violations, status, args), indent=2))
        return STATUS_EXIT[status]
    for v in violations:
        print(f"{v.error_class}: {v}")
    refused = getattr(args, "engine_defaults", False) and print_engine_defaults(path, kind)
    if status == "valid":
        print(f"{path}: valid")
        return 1 if refused else 0
    if status == "unverifiable":
        print(f"{path}: valid as far as checked; {len(violations)} part(s) unverifiable")
    else:
        print(f"{path}: {len(violations)} violation(s)", file=sys.stderr)
    return STATUS_EXIT[status]


SCHEMA = "weightfile.verify/1"
#: verify's verdicts and their exit codes (weightfile/commands/_common.py).
STATUS_EXIT = {"valid": 0, "violations": 1, "unverifiable": EXIT_UNVERIFIABLE}


def verdict(violations: list[Any]) -> str:
    """valid: none; unverifiable: only UnsupportedError parts (a missing key); else violations."""
    if not violations:
        return "valid"
    if all(v.error_class == "UnsupportedError" for v in violations):
        return "unverifiable"
    return "violations"


def json_document(
    path: Any, violations: list[Any], status: str, args: argparse.Namespace
) -> dict[str, Any]:
    """verify --json: the vocabulary inspect --json shares (schema, format, path, file_bytes,
    violations), plus the verdict and whether the file was hashed."""
    import os

    from .inspect import violation_json

    try:
        kind = "vqf" if sniff(path) == "vqf" else "ninfer3"
    except WeightfileError:
        kind = None  # no known magic: the one violation says so
    return {
        "schema": SCHEMA,
        "format": kind,
        "path": str(path),
        "file_bytes": os.stat(path).st_size,
        "status": status,
        "valid": status == "valid",
        "checksum": bool(args.checksum),
        "violations": [violation_json(v) for v in violations],
    }


def verify_vqf(path: Any, args: argparse.Namespace) -> list[Any]:
    from weightfile.model_file import validate
    from weightfile.progress import ProgressBar
    from weightfile.ref.vqf.read import open_vqf

    bar = None
    if args.checksum:
        try:
            with open_vqf(path, check_ranges=False) as vqf:
                covered = vqf.header.n_tensors * 64 + vqf.header.file_len - vqf.header.data_offset
        except (WeightfileError, OSError):
            covered = 0  # the validator reports why the file cannot be opened
        bar = ProgressBar(covered, "fnv1a64")
    try:
        return validate(
            path,
            checksum=args.checksum,
            engine=backend_named(args.engine),
            progress=bar,
            passphrase=passphrase(args),
            trusted_pub=trusted_pub("verify", args),
        )
    finally:
        if bar is not None:
            bar.close()


def print_engine_defaults(path: Any, kind: str) -> bool:
    """Print the spec/vqf.md §engine-defaults answer, one line per refusing condition; True when a
    default engine refuses the file."""
    if kind != "vqf":
        print(f"{path}: engine: --engine-defaults is about the VQF board engine; not checked")
        return False
    from weightfile.ref.vqf.engine_defects import engine_defects_file
    from weightfile.ref.vqf.engine_load import engine_load_file
    from weightfile.ref.vqf.read import open_vqf

    try:
        with open_vqf(path) as vqf:  # the header and directory suffice
            report = engine_load_file(vqf)
            defects = engine_defects_file(vqf)
    except (WeightfileError, OSError):
        return True  # the validator has reported why the file cannot be opened
    for f in report.findings:
        if not f.met:
            print(f"engine: {f.condition}: {f.detail}")
    for d in defects:  # spec/numerics.md §board-defects: loads, but computes something else
        print(f"engine: defect [{d.rule}] {d.detail}")
    print(f"{path}: engine: {report.summary()}")
    return not report.loads_by_default
