"""Which container a file is, from its first bytes (vqf.md §2.1, ninfer-v3.md §1)."""

from __future__ import annotations

import os

from weightfile.spec.errors import MalformedError
from weightfile.spec.ninfer3.framing import CONTINUATION_MAGIC, ENTRY_MAGIC
from weightfile.spec.vqf.constants import MAGIC_BYTES as VQF_MAGIC


def sniff(path: str | os.PathLike[str]) -> str:
    """'vqf' or 'ninfer'; anything else is a MalformedError naming the bytes found."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:4] == VQF_MAGIC:
        return "vqf"
    if head == ENTRY_MAGIC:
        return "ninfer"
    if head == CONTINUATION_MAGIC:
        raise MalformedError(
            "ninfer3.header.magic",
            "this is a .ninfer continuation volume; open the entry file instead",
            offset=0,
        )
    raise MalformedError(
        "format.magic", f"unknown file format (first bytes {head.hex(' ')})", offset=0
    )
