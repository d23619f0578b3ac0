"""`weightfile inspect FILE [--json]`: header, arch, flags by name and the directory.

A file that parses but breaks rules is still shown, followed by its violations (the JSON's
`violations`, in verify --json's form); only a file that cannot be parsed is refused. The JSON
document is tagged `"schema": "weightfile.inspect/1"` and shares its top-level vocabulary with
verify --json: `schema`, `format` ("vqf" | "ninfer3"), `path`, `file_bytes`, `violations`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from weightfile.formats import sniff
from weightfile.spec.errors import WeightfileError

from ._common import add_file_argument, add_passphrase_argument, passphrase, resolve_file


def register(sub: Any) -> None:
    parser = sub.add_parser("inspect", help="show a file's header, architecture and directory")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for tools")
    add_passphrase_argument(parser)
    parser.set_defaults(run=run)


SCHEMA = "weightfile.inspect/1"


def run(args: argparse.Namespace) -> int:
    path = resolve_file("inspect", args)
    kind = sniff(path)
    key = passphrase(args)
    if kind == "vqf":
        from weightfile.ref.vqf.describe import describe, format_text

        description = describe_vqf(path, key)
    else:
        from weightfile.ref.ninfer3.describe import describe, format_text

        description = describe(path)
    violations = rule_violations(path, key)
    if args.json:
        print(json.dumps(json_document(description, violations), indent=2))
        return 0
    print(format_text(description))
    if kind == "vqf":
        print(f"engine: {engine_defaults_line(path, key)}")
    if violations:
        print(f"\n{len(violations)} violation(s) (weightfile verify lists the same):")
        for v in violations:
            print(f"  {v.error_class}: {v}")
    return 0


def describe_vqf(path: Any, key: bytes | None) -> dict[str, Any]:
    """The VQF description; a directory entry past the file's end (a rule, not a parse error)
    is shown rather than refused."""
    from weightfile.ref.vqf.describe import describe
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.errors import InvalidError

    try:
        vqf = open_vqf(path, passphrase=key)
    except InvalidError as exc:
        if exc.rule != "vqf.directory.tensor_range":
            raise
        vqf = open_vqf(path, passphrase=key, check_ranges=False)
    with vqf:
        return describe(vqf, passphrase=key)


def rule_violations(path: Any, key: bytes | None) -> list[Any]:
    """Every violation the strict validator finds (no checksum: inspect reads no payload)."""
    from weightfile.model_file import validate

    return validate(path, passphrase=key)


def violation_json(v: Any) -> dict[str, Any]:
    """One violation as verify --json and inspect --json write it."""
    return {
        "rule": v.rule,
        "error_class": v.error_class,
        "detail": v.detail,
        "offset": v.offset,
        "path": v.path,
    }


def json_document(description: dict[str, Any], violations: list[Any]) -> dict[str, Any]:
    """The description under the shared top-level vocabulary (module docstring)."""
    d = dict(description)
    if "file_size" in d:  # the VQF describer's name for what .ninfer calls file_bytes
        d["file_bytes"] = d.pop("file_size")
    head = {k: d.pop(k) for k in ("format", "path", "file_bytes") if k in d}
    return {
        "schema": SCHEMA,
        **head,
        **d,
        "violations": [violation_json(v) for v in violations],
    }


def engine_defaults_line(path: Any, key: bytes | None) -> str:
    """Would a default board engine load it (spec/vqf.md §9.2), as one line."""
    from weightfile.ref.vqf.engine_load import engine_load_file
    from weightfile.ref.vqf.read import open_vqf

    try:
        with open_vqf(path, passphrase=key, check_ranges=False) as vqf:
            return engine_load_file(vqf).summary()
    except WeightfileError as exc:  # shown above with the violations; say why here too
        return f"not checked ({exc.rule})"
