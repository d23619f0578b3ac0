"""spec/ninfer3.md has the fact sheet's section numbers, and every section the rules cite resolves.

The code cites the document's headings by id (tests/docs/test_citations.py checks those); the
rule table cites them by number, as the corpus publishes them, so the document keeps the numbering
of the `.ninfer` v3 fact sheet it restates: sections 1-6 and 8 (there is no 7), plus 0 (open
questions and our decisions) and 9 (this tree)."""

from __future__ import annotations

import re
from pathlib import Path

from weightfile.spec.ninfer3.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "spec" / "ninfer3.md"
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.M)
NUMBER = re.compile(r"\d+(?:\.\d+)?")

# section -> number of subsections, as in the fact sheet (plus our sections 0 and 9, and 6.3-6.5:
# the vision and MTP components, which the fact sheet only names, the recipes, and 6.6: GGUF)
SECTIONS = {0: 9, 1: 9, 2: 9, 3: 8, 4: 7, 5: 0, 6: 6, 8: 0, 9: 1}


def headings(path: Path) -> set[str]:
    return set(HEADING.findall(path.read_text(encoding="utf-8")))


def test_the_document_keeps_the_fact_sheet_numbering() -> None:
    want = {str(n) for n in SECTIONS}
    want |= {f"{n}.{m}" for n, count in SECTIONS.items() for m in range(1, count + 1)}
    assert headings(DOC) == want


def test_every_ninfer3_rule_section_is_a_heading() -> None:
    have = headings(DOC)
    # a section may read "2.9", "spec/ninfer3.md §2.9" or a range "spec/ninfer3.md §3.6-§3.7"; every
    # number names a heading
    missing = {
        r.id: r.section
        for r in RULES.values()
        if not set(NUMBER.findall(r.section)) <= have or not NUMBER.search(r.section)
    }
    assert missing == {}
