"""The conformance description of a valid VQF file (conformance/README.md, "want.json").

Every value is a string so that any language can produce it without a float or 64-bit-integer
question: integers in decimal, float32 arch fields as the 8 lowercase hex digits of their bit
pattern, byte strings as lowercase hex, and each tensor's payload as the SHA-256 of its raw bytes
(spec/vqf.md §header-layout header, spec/vqf.md §entry directory, spec/vqf.md §fnv-trailer trailer).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.vqf.arch import ARCH_FIELD_NAMES
from weightfile.spec.vqf.constants import SIG_BYTES
from weightfile.spec.vqf.header import VQFHeader, field_offset
from weightfile.spec.vqf.sig import VQFSig

SIG_AT = field_offset(VQFHeader, "sig")

#: The arch fields stored as float32 (spec/vqf.md §header-layout); every other arch field is an
#: integer or array.
FLOAT_FIELDS = frozenset({"rope_theta", "norm_eps"})


def arch_value(name: str, value: Any) -> str | list[str]:
    """One arch field as the protocol writes it."""
    if name in FLOAT_FIELDS:
        return struct.pack("<f", value)[::-1].hex()  # big-endian digits of the f32 bit pattern
    if isinstance(value, list | tuple):
        return [str(int(v)) for v in value]
    return str(int(value))


def trailer(vqf: VQFFile) -> dict[str, str]:
    """The stored trailer: an FNV-1a-64 (spec/vqf.md §fnv-trailer), or an ENC file's HMAC-SM3 tag
    (spec/vqf.md §sm4-hmac) as 64 lowercase hex digits."""
    if vqf.header.encrypted:
        return {"hmac_sm3": vqf.stored_tag().hex()}
    return {"fnv1a64": f"{vqf.stored_fnv():016x}"}


def signature(vqf: VQFFile) -> dict[str, dict[str, str]]:
    """A SIGNED file's sig block fields pub, r, s, digest as lowercase hex (spec/vqf.md
    §signature-block)."""
    if not vqf.header.signed:
        return {}
    sig = VQFSig.parse(bytes(vqf.bytes_at(SIG_AT, SIG_AT + SIG_BYTES)))
    return {"sig": {name: bytes(sig[name]).hex() for name in ("pub", "r", "s", "digest")}}


def describe_vqf(vqf: VQFFile) -> dict[str, Any]:
    """What an implementation prints for a valid file: header, arch, directory, digests.

    An ENC file (opened with its passphrase) is described by its plaintext: the tensors' SHA-256
    are over the decrypted bytes, and the trailer is its tag.
    """
    h = vqf.header
    return {
        "format": "vqf",
        "header": {
            "layout": h.layout,
            "version": str(h.version),
            "flags": str(h.flags),
            "n_tensors": str(h.n_tensors),
            "data_offset": str(h.data_offset),
            "file_len": str(h.file_len),
            **trailer(vqf),
        },
        **signature(vqf),
        "arch": {name: arch_value(name, h.arch[name]) for name in ARCH_FIELD_NAMES},
        "tensors": [
            {
                "name": e.name,
                "qtype": str(e.qtype),
                "rows": str(e.rows),
                "cols": str(e.cols),
                "offset": str(e.offset),
                "bytes": str(e.bytes),
                "sha256": hashlib.sha256(vqf.payload(e)).hexdigest(),
            }
            for e in vqf.entries
        ],
    }
