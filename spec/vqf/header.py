"""VQFHeader in its two layouts (spec/vqf.md §header-layout current, spec/vqf.md §legacy-header
legacy). Both are version 2.

The directory starts at 448 in both, so the legacy record is followed by 16 zero bytes. Padding
and reserved bytes are parsed as raw bytes, not `Const`, so the strict validator can report a
non-zero byte as a rule violation at its offset instead of failing the parse.
"""

from __future__ import annotations

from typing import Final

from construct import Bytes, Const, Default, Int32ul, Int64ul, Struct

from .arch import VQFArch, VQFArchLegacy
from .constants import MAGIC
from .sig import VQFSig

_PREFIX = (
    "magic" / Const(MAGIC, Int32ul) * 'bytes "FQFW"',
    "version" / Int32ul * "2 = dense, 3 = MoE",
    "flags" / Int32ul * "VQFFlag bits; 10..31 zero",
    "n_tensors" / Int32ul * "directory entry count",
)

_TAIL = (
    "data_offset" / Int64ul * "start of the data region: 64-aligned, >= directory end",
    "file_len" / Int64ul * "end of the data region = offset of the trailer",
    "enc_iv" / Default(Bytes(16), bytes(16)) * "SM4-CTR initial counter; zero unless ENC",
    "enc_rsvd" / Default(Bytes(16), bytes(16)) * "zero",
    "sig" / VQFSig * "zero unless SIGNED",
)

VQFHeader = Struct(  # current layout, 448 bytes
    *_PREFIX,
    "arch" / VQFArch * "VQFArch, 45 words",
    "pad_arch" / Default(Bytes(4), bytes(4)) * "zero",
    *_TAIL,  # data_offset @200, file_len @208, enc_iv @216, enc_rsvd @232, sig @248
)

VQFHeaderLegacy = Struct(  # legacy layout, 432 bytes (+16 zero bytes to the directory)
    *_PREFIX,
    "arch" / VQFArchLegacy * "VQFArch without the MoE tail, 41 words",
    "pad_arch" / Default(Bytes(4), bytes(4)) * "zero",
    *_TAIL,  # data_offset @184, file_len @192, enc_iv @200, enc_rsvd @216, sig @232
)

LEGACY_TAIL_PAD: Final = 16  #: zero bytes [432, 448) of a legacy file


def field_offset(schema: Struct, name: str) -> int:
    """Byte offset of a top-level field, derived from the schema (never typed by hand)."""
    offset = 0
    for sc in schema.subcons:
        if sc.name == name:
            return offset
        offset += sc.sizeof()
    raise KeyError(name)


def sig_field_offset(schema: Struct, name: str) -> int:
    """Absolute header offset of a VQFSig field."""
    return field_offset(schema, "sig") + field_offset(VQFSig, name)


def arch_field_offset(schema: Struct, name: str) -> int:
    """Absolute header offset of an arch field."""
    arch = next(sc for sc in schema.subcons if sc.name == "arch")
    return field_offset(schema, "arch") + field_offset(arch.subcon, name)
