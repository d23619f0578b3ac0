"""What every case source hands the generator (conformance/README.md, "Layout")."""

from __future__ import annotations

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
