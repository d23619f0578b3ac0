"""Progress of a long bench run on stderr: a tqdm bar on a terminal only, silent otherwise.

Piped or redirected output (CI logs, `-o json > report.json`) stays clean; `--quiet` turns the
bar off on a terminal too. tqdm is the progress library the field uses; without it the run is
silent rather than failing.
"""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    """Counts timed repetitions; `phase` names what runs now (bandwidth probe, a test row)."""

    def __init__(self, total: int, enabled: bool, unit: str = "run") -> None:
        self.bar: Any = None
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:  # an optional nicety, never a reason to fail a benchmark
                return
            scale = unit == "B"  # bytes read best as MB / GB
            self.bar = tqdm(total=total, file=sys.stderr, unit=unit, unit_scale=scale,
                            leave=False, delay=0.5)  # fmt: skip

    def phase(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text)

    def tick(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
