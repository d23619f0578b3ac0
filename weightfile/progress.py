"""A dependency-free progress bar on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


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


def install_compile_note() -> None:
    """One line on stderr while the C kernels compile (fast/notify.py), on a terminal only: a
    first `--engine fast` or checksum otherwise pauses some seconds without a word."""
    from weightfile.fast import notify

    if sys.stderr.isatty():
        notify.on_compile = lambda note: print(f"{note} ...", file=sys.stderr, flush=True)
