"""A continuation volume whose name is longer than the system allows a file name (issue 35 item
7; spec/ninfer3.md §files-table: a continuation path is any ID, so nothing bounds its length).

Before, `inspect` looked at the volume with `Path.exists()`, which raised a raw ENAMETOOLONG:
exit 4 as an I/O error. Such a volume can never be present, so it is what an absent one is:
`ninfer3.part.missing`, listed as a violation, its name cut short in the message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.ninfer3_mutations import tiny_entry_only, two_files
from weightfile.cli import main
from weightfile.commands._common import EXIT_VIOLATIONS
from weightfile.ref.ninfer3.describe import verify

LONG = "v" * 5000


def entry_naming(folder: Path, name: str) -> Path:
    tiny_entry_only(two_files(name))(folder)
    return folder / "model.ninfer"


def test_verify_lists_the_long_name_as_a_missing_volume(tmp_path: Path) -> None:
    found = verify(entry_naming(tmp_path, LONG))
    assert [(v.error_class, v.rule, v.path) for v in found] == [
        ("MalformedError", "ninfer3.part.missing", "files[1]")
    ]
    assert "5000 characters" in found[0].detail
    assert len(found[0].detail) < 200


@pytest.mark.parametrize("name", [LONG, "absent"])
def test_inspect_reports_it_as_it_reports_an_absent_volume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    entry = entry_naming(tmp_path, name)
    assert main(["inspect", str(entry)]) == 0  # inspect lists violations; verify fails on them
    out = capsys.readouterr().out
    assert "1 violation(s)" in out
    assert "[ninfer3.part.missing]" in out
    assert main(["verify", str(entry)]) == EXIT_VIOLATIONS
