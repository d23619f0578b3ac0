"""The one place an engine's name (`--engine ref|fast`, `engine="ref"`) becomes a `Backend`.

`ref.backend.REFERENCE` is the readable oracle, `fast.backend.FAST` the vectorised path; both give
the same bits (tests/differential). Commands and the public API take the name; everything below
them takes the `Backend` (ref/backend.py).
"""

from __future__ import annotations

from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE, Backend

BACKENDS: dict[str, Backend] = {b.name: b for b in (REFERENCE, FAST)}
#: The choices of every command's --engine.
ENGINES: tuple[str, ...] = tuple(BACKENDS)


def backend_named(name: str) -> Backend:
    """The backend of an engine name; ValueError for any other name."""
    if name not in BACKENDS:
        raise ValueError(f"engine must be one of {ENGINES}, not {name!r}")
    return BACKENDS[name]


def as_backend(engine: str | Backend) -> Backend:
    """The public API's `engine=` argument: an engine name or a Backend."""
    return engine if isinstance(engine, Backend) else backend_named(engine)
