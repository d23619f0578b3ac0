"""What every case source hands the generator (conformance/README.md, "Layout")."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: (case id, case.json fields beyond id/format/kind/generator, input files by name, want.json
#: or None when the case has no expected answer file)
Case = tuple[str, dict[str, Any], dict[str, bytes], Any]


@dataclass(frozen=True, slots=True)
class ValidCase:
    """A valid container case: its folder under valid/, what it shows, and how to write it."""

    topic: str
    name: str
    meaning: str
    write: Callable[[Path], Any]


def read_case(folder: Path) -> dict[str, Any]:
    """The case.json of a case folder, as the adapter is given it (conformance/README.md,
    "case.json")."""
    return json.loads((folder / "case.json").read_text())
