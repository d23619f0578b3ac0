"""Answer every model case of the conformance corpus with the fast engine on each kernel path of
this machine, and print one JSON line: {"machine", "isas": {isa: {"passed", "failed": [ids]}}}.

Run natively and, by tests/emulated/test_isa_identity.py, as aarch64 Python under qemu-user. The
expected answers are the reference's (conformance/README.md "Where the expected values come
from"), so a pass on every path is the model computed bit for bit identically on every ISA.
"""

from __future__ import annotations

import json
import platform
import sys

from weightfile.conformance.runner import builtin_implementation, run_corpus
from weightfile.fast import _native

MODEL_CASES = "*model/*"  # every model kind: model, board-model, moe-model, vl-model


def main() -> int:
    lib = _native.library()
    if lib is None:
        print(json.dumps({"machine": platform.machine(), "isas": {}}))
        return 1
    found: dict[str, dict[str, object]] = {}
    impl = builtin_implementation("fast")
    for isa in _native.usable_isas(lib):
        _native.set_isa(lib, isa)
        results = run_corpus(impl, pattern=MODEL_CASES)
        found[isa] = {
            "passed": sum(r.passed for r in results),
            "failed": [f"{r.case}: {r.reason}" for r in results if not r.passed],
        }
    print(json.dumps({"machine": platform.machine(), "isas": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
