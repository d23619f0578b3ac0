"""Which container a file is, from its first bytes or else its name (spec/vqf.md §constants,
spec/ninfer3.md §entry-header).

The magic decides. When the first bytes name no format, the extension does: a `.vqf` file is
read as VQF and a `.ninfer` file as `.ninfer`, so that format's own reader reports what is
wrong (its magic rule, or a file too short to hold one) — the same rule whether the file is
given to `weightfile verify`, `weightfile.open` or `weightfile.validate`. A file with neither a
known magic nor a known extension is `format.magic`.
"""

from __future__ import annotations

import os
from pathlib import Path

from weightfile.ref.fileio import read_head
from weightfile.spec.errors import MalformedError
from weightfile.spec.ninfer3.framing import CONTINUATION_MAGIC, ENTRY_MAGIC
from weightfile.spec.vqf.constants import MAGIC_BYTES as VQF_MAGIC

#: The format a file name's extension names (lowercase), used only when the magic names none.
EXTENSIONS = {".vqf": "vqf", ".ninfer": "ninfer"}


def sniff(path: str | os.PathLike[str]) -> str:
    """'vqf' or 'ninfer' (module docstring); else a MalformedError naming the bytes found."""
    head = read_head(path, 8)  # a regular file only: a FIFO must not block
    # (spec/ninfer3.md §safe-files)
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
    by_name = EXTENSIONS.get(Path(path).suffix.lower())
    if by_name is not None:
        return by_name
    found = f"first bytes {head.hex(' ')}" if head else "the file is empty"
    raise MalformedError("format.magic", f"unknown file format ({found})", offset=0)
