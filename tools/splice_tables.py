"""Regenerate the tables spliced into spec/*.md from the schemas and rule tables.

python tools/splice_tables.py          # rewrite the documents in place
python tools/splice_tables.py --check  # exit 1 if any table drifted (the test suite does this)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from weightfile.spec.rules import RULES
from weightfile.spec.tables import field_table, rule_table
from weightfile.spec.vqf.arch import VQFArch
from weightfile.spec.vqf.header import VQFHeader, VQFHeaderLegacy
from weightfile.spec.vqf.sig import VQFSig
from weightfile.spec.vqf.tensor import VQFTensor
from weightfile.spec.vqf.trailer import VQFTrailerFNV, VQFTrailerTag

ROOT = Path(__file__).resolve().parents[1]

TABLES: dict[str, dict[str, Callable[[], str]]] = {
    "spec/vqf.md": {
        "vqf-header": lambda: field_table(VQFHeader),
        "vqf-header-legacy": lambda: field_table(VQFHeaderLegacy),
        "vqf-arch": lambda: field_table(VQFArch, base=16),
        "vqf-sig": lambda: field_table(VQFSig),
        "vqf-tensor": lambda: field_table(VQFTensor),
        "vqf-trailer": lambda: field_table(VQFTrailerFNV) + "\n\n" + field_table(VQFTrailerTag),
        "vqf-rules": lambda: rule_table(r for r in RULES.values() if r.id.startswith("vqf.")),
    },
}

MARKER = re.compile(
    r"(<!-- table:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S
)


def splice(text: str, tables: dict[str, Callable[[], str]]) -> str:
    seen = set()

    def fill(m: re.Match[str]) -> str:
        seen.add(m["name"])
        return f"{m[1]}{tables[m['name']]()}\n{m[4]}"

    out = MARKER.sub(fill, text)
    missing = set(tables) - seen
    if missing:
        raise SystemExit(f"markers missing for tables: {sorted(missing)}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    drifted = []
    for doc, tables in TABLES.items():
        path = ROOT / doc
        text = path.read_text()
        new = splice(text, tables)
        if new != text:
            drifted.append(doc)
            if not args.check:
                path.write_text(new)
    if args.check and drifted:
        print(f"tables drifted in {drifted}; run python tools/splice_tables.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
