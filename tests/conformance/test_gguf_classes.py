"""conformance/README.md "The failure classes GGUF readers learned": every case the table names
exists, is a rejection with the rule its id names, and is rejected so by the reference."""

from __future__ import annotations

import json
import re

import pytest

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, run_corpus

README = (CORPUS_DIR.parent / "README.md").read_text()
SECTION = README.split('<a id="gguf-classes"></a>')[1].split("\n## Untested")[0]
ROWS = [line for line in SECTION.splitlines() if line.startswith("| ") and "---" not in line][1:]
CELL_ID = re.compile(r"`([a-z_0-9]+/[a-z_0-9]+)`")
MODEL_ID = re.compile(r"`(reject-[a-z_-]+)`")


def named_cases() -> list[str]:
    """Case ids the table names: `topic/name` in the VQF and `.ninfer` columns."""
    ids = []
    for row in ROWS:
        _, vqf, ninfer = (cell.strip() for cell in row.strip("|").split(" | "))
        ids += [f"vqf/v1/invalid/{m}" for m in CELL_ID.findall(vqf)]
        ids += [f"ninfer3/v1/invalid/{m}" for m in CELL_ID.findall(ninfer)]
        ids += [f"ninfer3/v1/model/qwen35/{m}" for m in MODEL_ID.findall(ninfer)]
    return sorted(set(ids))


def test_the_table_has_every_class_and_says_something_for_each_format() -> None:
    assert len(ROWS) == 25  # the 21 handcrafted failure classes (versions merged) and 4 reports
    for row in ROWS:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 3 and all(cells), row
        for cell in cells[1:]:  # a case, or the reason it cannot occur
            assert "`" in cell or cell.startswith("cannot"), row


@pytest.mark.parametrize("cid", named_cases())
def test_a_named_case_rejects_with_the_rule_of_its_id(cid: str) -> None:
    case = json.loads((CORPUS_DIR / cid / "case.json").read_text())
    assert case["expect"] == "reject"
    if "/invalid/" in cid:
        fmt, topic, name = cid.split("/")[0], *cid.split("/")[-2:]
        assert case["rule"] == f"{fmt}.{topic}.{name}"
    [result] = run_corpus(builtin_implementation("ref"), pattern=cid)
    assert result.passed, result
