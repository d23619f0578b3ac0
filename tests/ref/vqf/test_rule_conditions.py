"""Every condition a rule's text names, on its own and at its boundary (issue 14 item 7).

`vqf.arch.mrope_sections` (spec/vqf.md §strict-checks) is broken by either of two conditions: a
section count above 4 (or non-zero sections past the count), or -- with has_mrope -- sections whose
sum is not head_dim / 2. test_rules.py breaks it once; here each half is broken alone and each
boundary is shown valid.
"""

from __future__ import annotations

import pytest

from weightfile.conformance.vqf_mutations import set_arch, write_base
from weightfile.ref.vqf.validate import validate

# The rule base file (conformance/vqf_mutations.py RULE_ARCH) has head_dim 8: sections sum to 4.
CASES = {
    # the count half: more than 4 sections, whatever has_mrope and the sum say
    "n_sec 5, no mrope": (dict(has_mrope=0, mrope_n_sec=5, mrope_sections=[0, 0, 0, 0]), True),
    "n_sec 5, sum right": (dict(has_mrope=1, mrope_n_sec=5, mrope_sections=[1, 1, 1, 1]), True),
    "n_sec 255": (dict(has_mrope=0, mrope_n_sec=255, mrope_sections=[0, 0, 0, 0]), True),
    "section past the count": (dict(has_mrope=0, mrope_n_sec=2, mrope_sections=[0, 0, 1, 0]), True),
    "n_sec 4 is allowed": (dict(has_mrope=1, mrope_n_sec=4, mrope_sections=[1, 1, 1, 1]), False),
    "n_sec 0, no mrope": (dict(has_mrope=0, mrope_n_sec=0, mrope_sections=[0, 0, 0, 0]), False),
    # the sum half: only with has_mrope
    "sum low": (dict(has_mrope=1, mrope_n_sec=3, mrope_sections=[1, 1, 1, 0]), True),
    "sum high": (dict(has_mrope=1, mrope_n_sec=3, mrope_sections=[2, 1, 2, 0]), True),
    "sum right": (dict(has_mrope=1, mrope_n_sec=3, mrope_sections=[2, 1, 1, 0]), False),
    "no mrope, any sum": (dict(has_mrope=0, mrope_n_sec=3, mrope_sections=[9, 9, 9, 0]), False),
    "sum counts only n_sec": (dict(has_mrope=1, mrope_n_sec=2, mrope_sections=[2, 2, 0, 0]), False),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_mrope_sections_each_condition(tmp_path, case):
    values, broken = CASES[case]
    path = write_base(tmp_path / "m.vqf")
    set_arch(**values)(path)
    rules = [v.rule for v in validate(path)]
    assert ("vqf.arch.mrope_sections" in rules) == broken, rules
    assert set(rules) <= {"vqf.arch.mrope_sections"}, rules
