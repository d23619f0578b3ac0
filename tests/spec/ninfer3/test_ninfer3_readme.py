"""spec/ninfer3/README.md carries the rule table generated from rules.py, never a retyped one."""

from __future__ import annotations

from pathlib import Path

from weightfile.spec.ninfer3.rules import rules_markdown

README = Path(__file__).resolve().parents[3] / "spec" / "ninfer3" / "README.md"


def test_readme_rule_table_equals_rules_py() -> None:
    text = README.read_text(encoding="utf-8")
    begin, end = "<!-- BEGIN rules.py -->\n", "<!-- END rules.py -->"
    spliced = text[text.index(begin) + len(begin) : text.index(end)]
    assert spliced == rules_markdown()
