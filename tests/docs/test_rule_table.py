"""One rule table (spec/rules.py): every rule id the code names is a row, and every row is raised
by some test.

The scan reads every string literal of the implementation (spec ref fast conformance weightfile
tools; the committed corpus is data, not code) and keeps those shaped like a rule id with a known
prefix. A row counts as raised by a test when a test names its id, or the conformance mutation
tables (which the tests run, asserting the exact rule) break it. A codec family row
(`vqf.codec.*.length`) counts when a test names one member, or a codec test builds the member's
id from the rule's suffix (``RULE + "code_domain"``, ``rule.endswith(".finite_input")``), which
is how the codec tests name them. A row no test can raise carries `untested` with the reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from weightfile.conformance.ninfer3_mutations import CASES as NINFER3_CASES
from weightfile.conformance.vqf_mutations import CASES as VQF_CASES
from weightfile.families.qwen35.conformance_mutations import MUTATIONS as QWEN35_CASES
from weightfile.families.qwen35.conformance_vl_mutations import MUTATIONS as QWEN35_VL_CASES
from weightfile.spec.errors import ERROR_CLASSES
from weightfile.spec.rules import PREFIXES, RULES, Rule, lookup

ROOT = Path(__file__).resolve().parents[2]
CODE = ("spec", "ref", "fast", "conformance", "weightfile", "tools")
CODEC_TESTS = ("tests/ref/codecs", "tests/fast/codecs", "tests/differential", "tests/conformance")
# A rule id: dotted lowercase words (no word ends in "_", so a prefix test such as
# startswith("ninfer3.text.hf_") is not read as an id); file names are not rule ids.
RULE_ID = re.compile(rf"(?:{'|'.join(PREFIXES)})(?:\.[a-z0-9]+(?:_[a-z0-9]+)*)+")
FILE_SUFFIXES = {"vqf", "ninfer", "json", "md", "py", "npz", "npy", "jinja", "bin", "txt"}


def python_files(*folders: str) -> Iterable[Path]:
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if "corpus" not in path.relative_to(ROOT).parts:
                yield path


def string_literals(paths: Iterable[Path]) -> dict[str, set[str]]:
    """Every string constant of the files (f-string pieces included) -> the files naming it."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.setdefault(node.value, set()).add(str(path.relative_to(ROOT)))
    return found


def rule_ids(literals: dict[str, set[str]]) -> dict[str, set[str]]:
    return {
        s: where
        for s, where in literals.items()
        if RULE_ID.fullmatch(s) and s.rsplit(".", 1)[1] not in FILE_SUFFIXES
    }


def raised_by_tests() -> tuple[set[str], set[str]]:
    """(rule ids the tests and mutation tables name, literals of the codec tests)."""
    tests = [p for p in python_files("tests") if p != Path(__file__).resolve()]  # not PENDING
    named = set(rule_ids(string_literals(tests)))
    named |= set(VQF_CASES) | set(NINFER3_CASES) | set(QWEN35_CASES) | set(QWEN35_VL_CASES)
    return named, set(string_literals(python_files(*CODEC_TESTS)))


def is_raised(rule: Rule, named: set[str], codec_literals: set[str]) -> bool:
    if any(rule.matches(n) for n in named):
        return True
    if "*" not in rule.id:
        return False
    suffix = rule.id.rsplit(".", 1)[1]
    return suffix in codec_literals or f".{suffix}" in codec_literals


def test_every_rule_id_in_the_code_is_a_row_of_the_table() -> None:
    used = rule_ids(string_literals(python_files(*CODE)))
    assert len(used) > 150  # the scan sees the ids (a broken pattern would pass vacuously)
    missing = {rule_id: sorted(where) for rule_id, where in used.items() if lookup(rule_id) is None}
    assert missing == {}


def test_every_row_is_raised_by_some_test() -> None:
    named, codec_literals = raised_by_tests()
    unraised = {
        r.id
        for r in RULES.values()
        if not (r.untested or r.retired) and not is_raised(r, named, codec_literals)
    }
    assert unraised == set(), "a new row needs a test that raises it"


def test_a_row_marked_untested_is_indeed_not_raised_by_a_test() -> None:
    named, codec_literals = raised_by_tests()
    stale = [r.id for r in RULES.values() if r.untested and is_raised(r, named, codec_literals)]
    assert stale == []


def test_rows_are_well_formed() -> None:
    for rule_id, r in RULES.items():
        assert r.id == rule_id and r.error_class in ERROR_CLASSES
        assert r.where.startswith(f"spec/{r.doc}.md §")
    assert all("*" not in r.id or r.origin == "codec" for r in RULES.values())


def test_a_codec_id_resolves_to_its_family_row() -> None:
    assert lookup("vqf.codec.q8_0_8x8.length") == RULES["vqf.codec.*.length"]
    assert lookup("ninfer3.codec.row_split_k128_v1.gap_nonzero") is not None
    assert lookup("vqf.codec.q8_0.length.extra") is None
    assert lookup("vqf.header.magic") == RULES["vqf.header.magic"]


def test_loader_steps_and_strict_checks_are_told_apart() -> None:
    """spec/vqf.md §loader-chain is the loader chain (numbered steps); spec/vqf.md §strict-checks
    the strict checks."""
    assert (RULES["vqf.file.too_small"].section, RULES["vqf.file.too_small"].step) == ("§9", 1)
    assert RULES["vqf.directory.tensor_range"].where == "spec/vqf.md §9 step 12"
    assert RULES["vqf.header.layout"].where == "spec/vqf.md §2.4 step 3"
    strict = [r for r in RULES.values() if r.origin == "strict" and r.section == "§9.1"]
    assert strict and all(r.step is None for r in strict)
    assert all(r.step is not None for r in RULES.values() if r.section == "§9")


def test_every_row_is_named_by_the_code_that_raises_it() -> None:
    """Not by the tables themselves, nor by the conformance generator that only names them."""
    tables = {ROOT / "spec" / "rules.py", ROOT / "spec" / "vqf" / "rules.py"}
    tables.add(ROOT / "spec" / "ninfer3" / "rules.py")
    code = [p for p in python_files("spec", "ref", "fast", "weightfile") if p not in tables]
    named = set(rule_ids(string_literals(code)))
    unnamed = sorted(
        r.id for r in RULES.values() if "*" not in r.id and not r.retired and r.id not in named
    )
    assert unnamed == []
    raised_retired = sorted(r.id for r in RULES.values() if r.retired and r.id in named)
    assert raised_retired == [], "a retired rule is still raised"
    assert {r.retired for r in RULES.values() if r.retired} <= named, "its successor is raised"


def test_a_retired_rule_names_a_live_successor_of_its_class() -> None:
    for r in RULES.values():
        if r.retired:
            successor = RULES[r.retired]
            assert not successor.retired and successor.error_class == r.error_class, r.id
