"""The `.ninfer` rule table is complete and every rule in it is raised by some test
(spec/ninfer3/rules.py), checked at run time with the error class.

tests/docs/test_rule_table.py scans the whole tree for every table (spec/rules.py); this test
is stricter for `.ninfer`: the `.ninfer` tests are run once more in a subprocess with
`NINFER3_RULE_LOG` set; every `raises_rule` / `expect_violations` that passes logs the error
class and rule it saw. Each rule of the table must appear, with the error class the table names.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from strategies.ninfer3 import RULE_LOG

from weightfile.spec.errors import ERROR_CLASSES
from weightfile.spec.ninfer3.rules import RULES

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [
    *(ROOT / "ref" / "ninfer3").glob("*.py"),
    *(ROOT / "spec" / "ninfer3").glob("*.py"),
    *(ROOT / "ref" / "qwen35").glob("*.py"),  # the Qwen3.5 text binder's ninfer3.text.* rules
    *(ROOT / "weightfile" / "families" / "qwen35").glob("*.py"),  # the importer's ninfer3.text.hf_*
]
# Property tests log no rules (they never call raises_rule); skipping them halves the re-run.
SKIP = [
    f"--ignore={ROOT / 'tests' / 'ref' / 'ninfer3' / name}"
    for name in ("test_ninfer3_roundtrip.py", "test_ninfer3_hostile.py")
]
# the Qwen3.5 binder tests: ninfer3.{text,vision,mtp,proposal}.*
BINDER = ("config", "bind", "vision_bind", "mtp_bind")
RULE_LITERAL = re.compile(r'"(ninfer3\.[a-z0-9_]+\.[a-z0-9_]+)"')


def test_rule_table_is_well_formed() -> None:
    for rule_id, rule in RULES.items():
        assert rule.id == rule_id and rule.error_class in ERROR_CLASSES
        assert re.fullmatch(r"ninfer3\.[a-z0-9_]+\.[a-z0-9_]+", rule_id)


def test_code_raises_only_rules_from_the_table_and_every_rule_somewhere() -> None:
    used = set()
    for path in SOURCES:
        if path.name != "rules.py":
            used |= set(RULE_LITERAL.findall(path.read_text(encoding="utf-8")))
    assert used - set(RULES) == set(), "rule ids used in code but missing from the table"
    assert set(RULES) - used == set(), "rule ids in the table that no code raises"


@pytest.mark.skipif(bool(os.environ.get(RULE_LOG)), reason="inside the logging run")
def test_every_rule_is_raised_by_some_test(tmp_path: Path) -> None:
    log = tmp_path / "rules.log"
    env = {**os.environ, RULE_LOG: str(log)}
    targets = [str(ROOT / "tests" / "ref" / "ninfer3"), str(ROOT / "tests" / "spec" / "ninfer3")]
    targets += [str(ROOT / "tests" / "ref" / "qwen35" / f"test_qwen35_{t}.py") for t in BINDER]
    targets.append(str(ROOT / "tests" / "convert" / "test_qwen35_hf.py"))  # ninfer3.text.hf_*
    targets.append(str(ROOT / "tests" / "reliability" / "test_open_safely.py"))  # part.outside
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets, *SKIP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    seen = {tuple(line.split()) for line in log.read_text().splitlines()}
    missing = [r.id for r in RULES.values() if (r.error_class, r.id) not in seen]
    assert missing == []
    stray = sorted(s for s in seen if s[1] not in RULES or RULES[s[1]].error_class != s[0])
    assert stray == []
