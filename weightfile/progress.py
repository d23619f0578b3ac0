"""Progress of the CLI's long operations on stderr, with tqdm, on a terminal only.

A bar is drawn only when stderr is a terminal and `--quiet` was not given (the CLI calls
`configure`); piped or redirected output (CI logs, `--json > report.json`) stays clean. tqdm
waits `DELAY` seconds before drawing, so a short run prints nothing at all. The one-line note
while the C kernels compile follows the same two conditions.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds before a bar appears: a checksum of a small file draws nothing.
DELAY = 0.5

_quiet = False


def configure(*, quiet: bool) -> None:
    """Set by the CLI from `--quiet` before a command runs."""
    global _quiet
    _quiet = quiet


def terminal() -> bool:
    return sys.stderr.isatty()


def wanted() -> bool:
    """Whether progress is shown: stderr is a terminal and `--quiet` was not given."""
    return not _quiet and terminal()


def _bar(
    total: int | None, label: str, unit: str, enabled: bool | None, delay: float | None
) -> Any:
    from tqdm import tqdm

    show = wanted() if enabled is None else enabled
    scale = unit == "B"  # bytes as kB/MB/GB, counts as they are
    return tqdm(
        total=total,
        desc=label,
        unit=unit,
        unit_scale=scale,
        unit_divisor=1024 if scale else 1000,
        file=sys.stderr,
        delay=DELAY if delay is None else delay,
        disable=not show,
        leave=False,  # the command's own last line says what was done
        # follow the terminal's size; a pty that reports 0 × 0 (script, some CI runners)
        # made tqdm draw nothing at all, so it gets 80 × 24
        **({"dynamic_ncols": True} if _columns() > 0 else {"ncols": 80, "nrows": 24}),
    )


def _columns() -> int:
    import os

    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):  # not a terminal, or a captured stream
        return 0


class ProgressBar:
    """A bar over `total` bytes, called with each chunk's byte count (the `progress` callable
    `validate`, `file_checksum` and the writers take); `close()` removes it."""

    def __init__(
        self,
        total: int,
        label: str,
        *,
        enabled: bool | None = None,
        unit: str = "B",
        delay: float | None = None,
    ) -> None:
        self.bar = _bar(max(total, 1), label, unit, enabled, delay)

    @property
    def enabled(self) -> bool:
        return not self.bar.disable

    def __call__(self, n: int) -> None:
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TensorBar:
    """One bar step per tensor written (convert, import): called as `bar(name, total)` after
    each tensor, the total known at the first call; shown under the same conditions as a bar."""

    def __init__(self, label: str, *, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = wanted() if enabled is None else enabled
        self.bar: Any = None

    def __call__(self, name: str, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            self.bar = _bar(total, self.label, "tensor", True, 0.0)
        self.bar.set_postfix_str(name, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def each(
    items: Iterable[T],
    label: str,
    *,
    total: int | None = None,
    unit: str = "it",
    enabled: bool | None = None,
    delay: float | None = None,
) -> Iterator[T]:
    """`items`, one bar step per item (conformance cases, tensors of `dump --all`)."""
    bar = _bar(total, label, unit, enabled, delay)
    try:
        for item in items:
            yield item
            bar.update(1)
    finally:
        bar.close()


def install_compile_note() -> None:
    """One line on stderr while the C kernels compile (fast/notify.py), under the same
    conditions as a bar: a first `--engine fast` or checksum otherwise pauses some seconds
    without a word."""
    from weightfile.fast import notify

    if wanted():
        notify.on_compile = lambda note: print(f"{note} ...", file=sys.stderr, flush=True)
