"""Each rule of spec/vqf.md §loader-chain and §strict-checks, broken alone, gives exactly its own
error.

The mutation table lives in weightfile.conformance.vqf_mutations (the conformance corpus is
generated from it): every case starts from a valid file and changes the fewest bytes that break
one rule. Loader-chain rules must also make `open_vqf` raise that exact class and rule id.
"""

from __future__ import annotations

import pytest

from weightfile.conformance.vqf_mutations import (
    CASES,
    LOADER_CHAIN,
    Q_NORM,
    both_layouts_valid,
    entry,
    write_base,
)
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.errors import ERROR_CLASSES
from weightfile.spec.vqf.header import field_offset
from weightfile.spec.vqf.rules import RETIRED, RULES
from weightfile.spec.vqf.tensor import VQFTensor


def test_the_base_file_is_valid(tmp_path):
    path = write_base(tmp_path / "base.vqf")
    assert validate(path, checksum=True) == []
    assert entry(path, Q_NORM).bytes == 96  # the pad the padding case corrupts


@pytest.mark.parametrize("rule", sorted(CASES))
def test_breaking_one_rule_gives_exactly_that_error(tmp_path, rule):
    path = write_base(tmp_path / "case.vqf")
    mutate, expected = CASES[rule]
    mutate(path)
    found = validate(path, checksum=True)
    rule = RETIRED.get(rule, rule)  # a retired v1 case is reported by its successor
    assert {v.rule for v in found} == (expected or {rule}), [str(v) for v in found]
    mine = next(v for v in found if v.rule == rule)
    assert mine.error_class == RULES[rule].error_class
    assert mine.offset is not None or mine.path is not None
    if rule in LOADER_CHAIN:
        with pytest.raises(ERROR_CLASSES[RULES[rule].error_class]) as info:
            open_vqf(path).close()
        assert info.value.rule == rule


def test_layout_is_undetermined_when_both_pairs_are_valid(tmp_path):
    path = write_base(tmp_path / "both.vqf")
    both_layouts_valid(path)
    assert [v.rule for v in validate(path)] == ["vqf.header.layout"]


def test_every_file_rule_has_a_case():
    """Writer and lookup rules are tested in test_write.py and test_read.py."""
    file_rules = {r.id for r in RULES.values() if r.origin in ("loader", "strict", "feature")}
    assert file_rules == set(CASES)


def test_entry_offsets_come_from_the_schema():
    assert field_offset(VQFTensor, "offset") == 48
