"""Which container a file is, from its first bytes or else its name (spec/vqf.md §constants,
spec/ninfer3.md §entry-header).

The magic decides. When the first bytes name no format, the extension does: a `.vqf` file is
read as VQF and a `.ninfer` file as `.ninfer`, so that format's own reader reports what is
wrong (its magic rule, or a file too short to hold one) — the same rule whether the file is
given to `weightfile verify`, `weightfile.open` or `weightfile.validate`. A file with neither a
known magic nor a known extension is `format.magic`. Files users mistake for model files (GGUF,
PNG, JPEG, .npy, .npz, safetensors) are recognised by their own first bytes, whatever their name,
and the `format.magic` message names what the file is and which command reads it.
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

#: Files users hand to inspect/verify that are neither: (what it is, which command reads it),
#: recognised by their own magic before the extension is looked at.
FOREIGN = (
    (b"GGUF", "a GGUF model file", "`weightfile convert FILE OUT.vqf` converts it"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "`weightfile run`/`trace` take it with --image"),
    (b"\xff\xd8\xff", "a JPEG image", "`weightfile run`/`trace` take it with --image"),
    (b"\x93NUMPY", "a NumPy .npy array (what `weightfile dump` writes)",
     "`weightfile diff` compares arrays"),
    (b"PK\x03\x04", "a zip archive (an .npz, such as a trace)", "`weightfile diff` compares .npz"),
)  # fmt: skip


def sniff(path: str | os.PathLike[str]) -> str:
    """'vqf' or 'ninfer' (module docstring); else a MalformedError naming the bytes found."""
    head = read_head(path, 9)  # a regular file only: a FIFO must not block
    # (spec/ninfer3.md §safe-files)
    if head[:4] == VQF_MAGIC:
        return "vqf"
    if head[:8] == ENTRY_MAGIC:
        return "ninfer"
    if head[:8] == CONTINUATION_MAGIC:
        raise MalformedError(
            "ninfer3.header.magic",
            "this is a .ninfer continuation volume; open the entry file instead",
            offset=0,
        )
    foreign(head, path)
    by_name = EXTENSIONS.get(Path(path).suffix.lower())
    if by_name is not None:
        return by_name
    found = f"first bytes {head[:8].hex(' ')}" if head else "the file is empty"
    raise MalformedError("format.magic", f"unknown file format ({found})", offset=0)


def foreign(head: bytes, path: str | os.PathLike[str]) -> None:
    """`format.magic` naming a GGUF, PNG, JPEG, .npy, .npz or safetensors file and the command
    that reads it; nothing for other bytes."""
    known = [(what, reader) for magic, what, reader in FOREIGN if head.startswith(magic)]
    if not known and is_safetensors(head, path):
        known = [("a safetensors file (Hugging Face weights, or `weightfile dump --all`)",
                  "`weightfile convert` reads a checkpoint's folder")]  # fmt: skip
    if known:
        what, reader = known[0]
        raise MalformedError(
            "format.magic", f"not a VQF or .ninfer file: this is {what}; {reader}", offset=0
        )


def is_safetensors(head: bytes, path: str | os.PathLike[str]) -> bool:
    """A safetensors file (`head`: its first 9 bytes): a little-endian u64 header length n, then
    n bytes of JSON starting with "{", all inside the file (the format has no magic)."""
    if len(head) < 8:
        return False
    n = int.from_bytes(head[:8], "little")
    try:
        size = os.stat(path).st_size
    except OSError:
        return False
    return 2 <= n <= size - 8 and head[8:9] == b"{"
