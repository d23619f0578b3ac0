"""The documents agree with the code: spliced tables are current, every rule id is raised."""

import re
import subprocess
import sys
from pathlib import Path

from weightfile.spec.vqf.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
#: Where rule ids are raised: the oracle, and the importers (vqf.import.*), which are API-side.
RAISING = ("ref", "weightfile/convert")


def implementation_source() -> str:
    return "\n".join(p.read_text() for d in RAISING for p in sorted((ROOT / d).rglob("*.py")))


def test_spliced_tables_match_the_schemas():
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "splice_tables.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_vqf_rule_id_is_raised_by_the_implementation():
    source = implementation_source()
    raised = set(re.findall(r'"(vqf\.[a-z0-9_.]+)"', source))
    assert set(RULES) - raised == set()


def test_every_rule_id_the_implementation_raises_is_in_the_table():
    source = implementation_source()
    raised = set(re.findall(r'"(vqf\.[a-z_]+\.[a-z0-9_]+)"', source))
    assert raised - set(RULES) == set()
