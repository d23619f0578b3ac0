"""The `section` string a case.json publishes for its rule (conformance/README.md, "case.json").

The rule table cites a heading and, for one step of a procedure, the step number (spec/rules.py).
The committed corpus was published before that split, in one string per format: VQF joins the step
to the heading ("spec/vqf.md §9 step 12" is spec/vqf.md §loader-chain step 12, "spec/vqf.md
§2.4 step 1" is spec/vqf.md §legacy-header step 1) and `.ninfer` writes the heading without the §
("2.9"). Engines read these strings, so they stay exactly as published.
"""

from __future__ import annotations

from weightfile.spec.rule import Rule


def published_section(rule: Rule) -> str:
    """The case.json `section` of `rule`: "spec/vqf.md §9 step 12" / "spec/vqf.md §3.3" for VQF,
    "1.3" for `.ninfer`."""
    if rule.doc == "vqf":
        return rule.section if rule.step is None else f"{rule.section}.{rule.step}"
    assert rule.step is None, f"{rule.id}: the .ninfer corpus publishes no step"
    return rule.section.removeprefix("§")
