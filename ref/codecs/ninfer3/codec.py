"""`get_codec(format, layout)`: one registered `.ninfer` v3 pair, its functions bound
(spec/ninfer3.md §format-registry, §layout-registry).

The same `Codec` record is built by `fast.codecs.ninfer3.codec` from the fast modules; callers
switch engines by the `Backend` they hold (ref/backend.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from weightfile.spec.codecs.ninfer3.registry import CODECS, CodecPair
from weightfile.spec.errors import InvalidError

PUBLIC_FUNCTIONS = (
    "encode",
    "encode_words",
    "decode",
    "decode_words",
    "validate",
    "row_view",
    "row_slice",
)


@dataclass(frozen=True)
class Codec:
    """The public surface of one (format, layout) pair, identical in ref and fast.

    encode(values, shape, *, encoder=...) -> bytes
    encode_words(words: dict, shape) -> bytes
    decode(payload, shape) -> ndarray      (float32; int32 for int32; uint8 for raw bytes)
    decode_words(payload, shape) -> dict[str, ndarray]
    validate(payload, shape) -> list[Violation]
    row_view(shape, start, count) -> RowView           (row_split_k128_v1 only)
    row_slice(payload, shape, rows) -> bytes           (row_split_k128_v1, row_scale_v1)
    """

    format: str | None
    layout: str
    encoder: str | None  # the canonical encoder's name; None when words can only be imported
    encode: Callable[..., bytes]
    encode_words: Callable[..., bytes]
    decode: Callable[..., Any]
    decode_words: Callable[..., dict]
    validate: Callable[..., list]
    row_view: Callable[..., Any] | None = None
    row_slice: Callable[..., bytes] | None = None


def bind(package: str, pair: CodecPair) -> Codec:
    """Bind the pair's format name into every public function of its module in `package`.

    `package` is this module's own package or fast's twin (`__package__` of the caller): the
    registry names the module, and only the pair asked for is imported; callers choose ref or fast
    by the `Backend` (ref/backend.py) whose `get_codec` they call, never by a string."""
    module = importlib.import_module(f"{package}.{pair.module}")
    fn = {
        name: partial(getattr(module, name), pair.format)
        for name in PUBLIC_FUNCTIONS
        if hasattr(module, name)
    }
    return Codec(format=pair.format, layout=pair.layout, encoder=pair.encoder, **fn)


def lookup(format_name: str | None, layout: str) -> CodecPair:
    """The registered pair, or InvalidError for an unregistered pair (spec/ninfer3.md
    §layout-registry)."""
    pair = CODECS.get((format_name, layout))
    if pair is None:
        raise InvalidError(
            "ninfer3.codec.unknown_pair",
            f"no codec for format {format_name!r} in layout {layout!r}",
        )
    return pair


def get_codec(format_name: str | None, layout: str) -> Codec:
    """The reference codec of (format, layout); resources use `(None, "raw_bytes_v1")`."""
    return bind(__package__, lookup(format_name, layout))
