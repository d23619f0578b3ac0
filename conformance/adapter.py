"""The built-in implementations `ref` and `fast`, speaking the conformance protocol.

    python -m weightfile.conformance.adapter --engine ref|fast PATH

A valid file: the description (vqf_describe) as JSON on stdout, exit 0. A rejected file: one line
`ErrorClass: rule-id: message` on stderr, exit 1 (conformance/README.md, "Protocol"). The loader
chain of vqf.md §9 runs first (open_vqf), then the strict checks of §9.1 with the FNV trailer
checked; the first violation found is the one reported.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from weightfile.spec.errors import Violation, WeightfileError

from .vqf_describe import describe_vqf

ENGINES = ("ref", "fast")


@dataclass(frozen=True, slots=True)
class Answer:
    """What a protocol command produced: exit status, stdout and stderr."""

    status: int
    stdout: str
    stderr: str


def rejection(v: Violation) -> str:
    """The stderr line of a rejected file."""
    return f"{v.error_class}: {v.rule}: {v.detail}\n"


def answer(path: str, engine: str) -> Answer:
    """Run `engine` on the VQF file at `path` as the protocol command would."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    read = importlib.import_module(f"weightfile.{engine}.vqf.read")
    validate = importlib.import_module(f"weightfile.{engine}.vqf.validate")
    try:
        vqf = read.open_vqf(path)  # the loader chain (§9), tensor ranges included
    except WeightfileError as exc:
        return Answer(1, "", rejection(exc.violation))
    with vqf:
        found = validate.validate(path, checksum=True)  # §9.1 and the trailer (§3.5)
        if found:
            return Answer(1, "", rejection(found[0]))
        return Answer(0, json.dumps(describe_vqf(vqf), indent=2) + "\n", "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weightfile.conformance.adapter")
    parser.add_argument("--engine", choices=ENGINES, default="ref")
    parser.add_argument("path")
    args = parser.parse_args(argv)
    result = answer(args.path, args.engine)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.status


if __name__ == "__main__":
    sys.exit(main())
