"""VQFTensor: one 64-byte directory entry (spec/vqf.md §entry)."""

from __future__ import annotations

from construct import Bytes, Default, Int32ul, Int64ul, Struct

from .constants import NAME_BYTES

VQFTensor = Struct(
    "name" / Bytes(NAME_BYTES) * "NUL-terminated, <= 31 visible chars, rest zero",
    "qtype" / Int32ul * "QType code (§3.2)",
    "rows" / Int32ul * "diagnostic geometry (§7.3)",
    "cols" / Int32ul * "diagnostic geometry",
    "pad" / Default(Bytes(4), bytes(4)) * "zero; covered by FNV/HMAC/SM3",
    "offset" / Int64ul * "absolute offset of the first byte, 64-aligned",
    "bytes" / Int64ul * "payload length without the trailing pad",
)


def encode_name(name: str) -> bytes:
    """The 32-byte name field: ASCII, NUL-terminated, zero padded. Caller checks the length."""
    raw = name.encode("ascii")
    return raw + bytes(NAME_BYTES - len(raw))


def decode_name(field: bytes) -> str:
    """The visible name: the bytes before the first NUL (all 32 if none), non-ASCII escaped."""
    visible = field.split(b"\0", 1)[0]
    return visible.decode("ascii", errors="backslashreplace")
