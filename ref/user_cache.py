"""The one cache folder every part of weightfile writes into (docs/commands.md, "Requirements
and the kernel cache"): the compiled kernels (`native/`), the demo model (`demo/`), the synthetic
bench models (`synthetic/`) and the benchmarks' downloads live below `cache_root()`.

`$WEIGHTFILE_CACHE` if set, else `$XDG_CACHE_HOME/weightfile` (the XDG base directory rule), else
`~/.cache/weightfile`. `CACHE_WORDING` is the one sentence the help texts and the docs use.
"""

from __future__ import annotations

import os
from pathlib import Path

#: How the help texts and docs/commands.md state the cache folder (tests/docs check the wording).
CACHE_WORDING = "$WEIGHTFILE_CACHE, else $XDG_CACHE_HOME/weightfile, else ~/.cache/weightfile"


def cache_root() -> Path:
    """The cache folder by `CACHE_WORDING` (not created here: each user creates its subfolder)."""
    env = os.environ.get("WEIGHTFILE_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "weightfile"


def cache_dir(name: str) -> Path:
    """One user's subfolder of the cache: `native`, `demo`, `synthetic`, ..."""
    return cache_root() / name
