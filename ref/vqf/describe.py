"""What `weightfile inspect` shows of a VQF file: header, arch, flags, directory
(spec/vqf.md §header, §directory)."""

from __future__ import annotations

from typing import Any

from weightfile.spec.vqf.flags import flag_names
from weightfile.spec.vqf.qtypes import qtype_name

from .protect import describe_protection
from .read import VQFFile


def describe(vqf: VQFFile, *, passphrase: bytes | None = None) -> dict[str, Any]:
    """A JSON-serialisable description; byte strings are hex, integers stay integers.

    A protected file gains a "protection" entry (spec/vqf.md §protected): the tag (checked when the
    passphrase is given), the writer kind its pads show (spec/vqf.md §decisions item 7) and the
    loader's policy.
    """
    h = vqf.header
    out = {
        "format": "vqf",
        "path": str(vqf.path),
        "file_size": vqf.size,
        "header": {
            "layout": h.layout,
            "header_bytes": 448 if h.layout == "current" else 432,
            "version": h.version,
            "flags": h.flags,
            "flag_names": flag_names(h.flags),
            "n_tensors": h.n_tensors,
            "data_offset": h.data_offset,
            "file_len": h.file_len,
            "enc_iv": h.enc_iv.hex(),
            "trailer": "hmac-sm3" if h.encrypted else "fnv1a64",
            "trailer_value": vqf.stored_tag().hex() if h.encrypted else f"{vqf.stored_fnv():#018x}",
            "signed": h.signed,
            "sig": {k: v.hex() if isinstance(v, bytes) else v for k, v in h.sig.items()},
        },
        "arch": dict(h.arch),
        "tensors": [
            {
                "index": e.index,
                "name": e.name,
                "qtype": e.qtype,
                "qtype_name": qtype_name(e.qtype),
                "rows": e.rows,
                "cols": e.cols,
                "offset": e.offset,
                "bytes": e.bytes,
            }
            for e in vqf.entries
        ],
    }
    if h.encrypted or h.signed:
        tag = vqf.stored_tag() if h.encrypted else b""
        out["protection"] = describe_protection(
            vqf.bytes_at(0, vqf.size), h, vqf.entries, tag, passphrase, vqf.release_pages
        )
    return out
