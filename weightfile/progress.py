"""Progress bars on stderr, shown only when stderr is a terminal: a dependency-free byte bar,
and a tqdm bar of one step per tensor (convert)."""

from __future__ import annotations

import sys
import time
from typing import Any


class ProgressBar:
    def __init__(self, total: int, label: str, *, enabled: bool | None = None) -> None:
        self.total, self.label, self.done = max(total, 1), label, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = self.last = time.monotonic()

    def __call__(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.1 or self.done >= self.total):
            self.last = now
            frac = min(self.done / self.total, 1.0)
            rate = self.done / max(now - self.start, 1e-9) / 1e9
            bar = "#" * int(frac * 30)
            sys.stderr.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {rate:5.2f} GB/s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


class TensorBar:
    """A tqdm bar on stderr with one step per tensor written, shown only on a terminal (and not
    with --quiet); called as `bar(name, total)` after each tensor, the total known at the
    first call."""

    def __init__(self, label: str, *, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.bar: Any = None

    def __call__(self, name: str, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.label, unit="tensor", file=sys.stderr)
        self.bar.set_postfix_str(name, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def install_compile_note() -> None:
    """One line on stderr while the C kernels compile (fast/notify.py), on a terminal only: a
    first `--engine fast` or checksum otherwise pauses some seconds without a word."""
    from weightfile.fast import notify

    if sys.stderr.isatty():
        notify.on_compile = lambda note: print(f"{note} ...", file=sys.stderr, flush=True)
