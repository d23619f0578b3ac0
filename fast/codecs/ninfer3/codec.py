"""`get_codec(format, layout)` over the vectorised modules (mirrors `ref.codecs.ninfer3.codec`)."""

from __future__ import annotations

from weightfile.ref.codecs.ninfer3.codec import Codec, bind, lookup

__all__ = ["Codec", "get_codec"]


def get_codec(format_name: str | None, layout: str) -> Codec:
    """The fast codec of (format, layout); resources use `(None, "raw_bytes_v1")`."""
    return bind(__package__, lookup(format_name, layout))
