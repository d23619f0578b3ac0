"""Each condition of `vqf.arch.reserved` (spec/vqf.md §arch-semantics), both directions of the first
one: a validator that checked `head_dim_full > head_dim` only (tools/mutations.py vqf-head-dim-full)
would pass a file whose head_dim_full is smaller. head_dim is 8 in the rule base file
(conformance/vqf_mutations.py RULE_ARCH)."""

from __future__ import annotations

import pytest

from weightfile.conformance.vqf_mutations import set_arch, write_base
from weightfile.ref.vqf.validate import validate

CASES = {
    "head_dim_full below head_dim": (dict(head_dim_full=7), True),
    "head_dim_full zero": (dict(head_dim_full=0), True),
    "head_dim_full above head_dim": (dict(head_dim_full=9), True),
    "head_dim_full equal": (dict(head_dim_full=8), False),
    "kv_lora_rank set": (dict(kv_lora_rank=1), True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reserved_arch_each_condition(tmp_path, case):
    values, broken = CASES[case]
    path = write_base(tmp_path / "m.vqf")
    set_arch(**values)(path)
    violations = list(validate(path))
    rules = [v.rule for v in violations]
    assert ("vqf.arch.reserved" in rules) == broken, rules
    assert set(rules) <= {"vqf.arch.reserved"}, rules
    if broken:
        field = next(iter(values))
        assert [v.path for v in violations] == [f"header.arch.{field}"]
