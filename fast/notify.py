"""Two messages of the C kernel build, kept out of `_native` and free of `weightfile` imports
(fast/ sits below the API layer; tests/test_layering.py).

* `on_compile`: a callback the command line sets (weightfile/progress.py) to print one line while
  the kernels compile (some seconds, once per source change). None: silent, as a library is.
* `unavailable`: the no-compiler warning as ONE line, and once per cache directory: a stamp file
  there records that this machine was told, so every later process stays quiet.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from pathlib import Path

#: Called with a one-line note just before the compiler runs; set by the CLI.
on_compile: Callable[[str], None] | None = None


def compiling(note: str) -> None:
    if on_compile is not None:
        on_compile(note)


def unavailable(reason: str, cache: Path) -> None:
    """Warn (RuntimeWarning, one line) that the fallback is used, unless this cache was told."""
    first = reason.strip().splitlines()[0] if reason.strip() else "unknown reason"
    stamp = cache / f".no-native-{hashlib.sha256(first.encode()).hexdigest()[:12]}"
    if stamp.exists():
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        pass  # an unwritable cache: warn every time rather than never
    warnings.warn(
        f"weightfile: C kernels unavailable, using the slower fallback: {first[:160]}",
        RuntimeWarning,
        stacklevel=3,
    )
