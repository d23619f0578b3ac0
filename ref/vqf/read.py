"""Open a VQF file: map it, read the header and directory, hand out payload views (spec/vqf.md
§header, §loader-chain).

Opening follows the loader chain of spec/vqf.md §loader-chain steps 1–5 and the range check of step
12 — the checks a reader needs before any view into the file is safe. Everything else the engine or
spec/vqf.md §strict-checks demands is the validator's job (`validate.py`), which lists every
violation instead of stopping at one. Opening reads only the header and the directory; tensor
payloads are zero-copy views of the map. An ENC file opened with its passphrase is authenticated and
decrypted at open time into a private anonymous mapping (`protect.decrypt_region`, spec/vqf.md
§sm4-hmac); its payloads are views of that.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

from weightfile.ref.fileio import map_readonly, open_regular
from weightfile.spec.errors import InvalidError, MalformedError, UnsupportedError
from weightfile.spec.records import parse_record, truncated
from weightfile.spec.vqf.arch import ARCH_FIELD_NAMES, GATED_FIELD_NAMES, MOE_FIELD_NAMES
from weightfile.spec.vqf.constants import (
    DIRECTORY_OFFSET,
    ENTRY_BYTES,
    HEADER_BYTES,
    LEGACY_HEADER_BYTES,
    MAGIC_BYTES,
    MIN_FILE_BYTES,
    VERSION_DENSE,
    VERSIONS,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.header import (
    VQFHeader,
    VQFHeaderLegacy,
    arch_field_offset,
    field_offset,
)
from weightfile.spec.vqf.placement import directory_end, trailer_bytes
from weightfile.spec.vqf.tensor import VQFTensor, decode_name

from .protect import decrypt_region
from .records import Entry, Header, VQFFile

__all__ = ["Entry", "Header", "VQFFile", "open_vqf"]


def open_vqf(
    path: str | os.PathLike[str], *, check_ranges: bool = True, passphrase: bytes | None = None
) -> VQFFile:
    """Map `path` and read its header and directory, in the order of spec/vqf.md §loader-chain steps
    1–5 and 12.

    With `passphrase`, an ENC file is authenticated over its whole protected region and only then
    decrypted, from a private copy (spec/vqf.md §sm4-hmac): a wrong tag raises `vqf.enc.tag` and
    returns nothing. Without one, its header and directory are readable and a payload raises
    `vqf.enc.no_key`. The passphrase of a plaintext file is ignored.
    """
    path = Path(path)
    fd, size = open_regular(path)  # a regular file only (spec/ninfer3.md §safe-files)
    try:
        if size < MIN_FILE_BYTES:  # not a VQF at all, or a truncated one (magic first)
            require_magic_prefix(os.pread(fd, len(MAGIC_BYTES), 0))
        require_min_size(size)  # step 1, before mapping: an empty file cannot be mapped
        mapped = map_readonly(fd, size, path)
    except BaseException:
        os.close(fd)
        raise
    view = memoryview(mapped)
    try:
        header = read_header(view)
        entries = read_directory(view, header.n_tensors)
        if check_ranges:
            for e in entries:
                require_in_range(e, header.file_len)
    except BaseException:
        view.release()
        mapped.close()
        os.close(fd)
        raise
    vqf = VQFFile(path, size, header, entries, mapped, view, _fd=fd)
    if header.encrypted and passphrase is not None:
        try:
            vqf._plain, vqf.stream_kind = decrypt_region(
                view, header, entries, vqf.stored_tag(), passphrase, vqf.release_pages
            )
        except BaseException:
            vqf.close()
            raise
        vqf._plain_view = memoryview(vqf._plain)
    return vqf


def require_magic_prefix(head: bytes) -> None:
    """A short file whose first bytes are not (a prefix of) the magic is not a VQF:
    `vqf.header.magic`, not `vqf.file.too_small` (spec/vqf.md §loader-chain, the [weightfile]
    note of step 1): "truncated" would send the user looking for missing bytes."""
    if head and not MAGIC_BYTES.startswith(head):
        raise MalformedError(
            "vqf.header.magic",
            f"not a VQF file: bad magic (first bytes {head.hex(' ')}, a VQF starts with "
            f"{MAGIC_BYTES.hex(' ')})",
            offset=0,
        )


def require_min_size(size: int) -> None:
    """A file smaller than 448 + 64 bytes is rejected (spec/vqf.md §loader-chain step 1)."""
    if size < MIN_FILE_BYTES:
        raise MalformedError(
            "vqf.file.too_small",
            "file is empty"
            if size == 0
            else truncated(MIN_FILE_BYTES, size, "the smallest VQF file"),
            offset=size,
        )


def read_header(view: memoryview) -> Header:
    """Magic, version, the arch gate and the layout detection of spec/vqf.md §legacy-header, in that
    order."""
    current = parse_record(
        VQFHeader, view, 0, rule="vqf.file.too_small", path="header", const_rule="vqf.header.magic"
    )
    require_version(current["version"])
    require_arch_geometry(current["arch"])
    require_directory_bounds(current["n_tensors"], len(view))
    legacy = parse_record(VQFHeaderLegacy, view, 0, rule="vqf.file.too_small", path="header")
    if detect_layout(current, legacy, len(view)) == "current":
        return _normalise(current, "current", b"")
    return _normalise(legacy, "legacy", bytes(view[LEGACY_HEADER_BYTES:HEADER_BYTES]))


def require_version(version: int) -> None:
    """version must be 2 (dense) or 3 (MoE) (spec/vqf.md §loader-chain step 3)."""
    if version not in VERSIONS:
        raise UnsupportedError(
            "vqf.header.version",
            f"version {version} is not supported (2 = dense, 3 = MoE)",
            offset=4,
            path="header.version",
        )


def require_arch_geometry(arch: Any) -> None:
    """dim, n_layers, n_heads, head_dim, ffn_dim and vocab_size must be > 0 (spec/vqf.md
    §legacy-header step 2)."""
    zero = [name for name in GATED_FIELD_NAMES if arch[name] == 0]
    if zero:
        raise InvalidError(
            "vqf.header.arch_geometry",
            f"arch geometry invalid: {', '.join(zero)} must be > 0",
            offset=_arch_offset(zero[0]),
            path=f"header.arch.{zero[0]}",
        )


def require_directory_bounds(n_tensors: int, size: int) -> None:
    """The directory [448, 448 + 64·n) must lie inside the file; checked before it is read."""
    end = directory_end(n_tensors)
    if end > size:
        raise MalformedError(
            "vqf.directory.bounds",
            f"n_tensors {n_tensors} needs the directory to end at {end}, "
            f"past the end of the {size}-byte file",
            offset=12,
            path="header.n_tensors",
        )


def candidate_problems(raw: Any, data_offset: int, file_len: int, size: int) -> list[str]:
    """Why a (data_offset, file_len) pair is not valid for this file; empty if it is
    (spec/vqf.md §legacy-header step 3)."""
    tag_len = trailer_bytes(bool(raw["flags"] & VQFFlag.ENC))
    dir_end = directory_end(raw["n_tensors"])
    d, f = data_offset, file_len
    checks = [
        (d != 0 and f != 0, f"data_offset {d} and file_len {f} must be non-zero"),
        (d % 64 == 0, f"data_offset {d} is not a multiple of 64"),
        (d >= dir_end, f"data_offset {d} is inside the directory (ends at {dir_end})"),
        (d < size, f"data_offset {d} is not below the file size {size}"),
        (f + tag_len == size, f"file_len {f} + trailer {tag_len} != file size {size}"),
        (f > d, f"file_len {f} is not above data_offset {d}"),
    ]
    return [problem for ok, problem in checks if not ok]


def detect_layout(current: Any, legacy: Any, size: int) -> str:
    """Tell the 448-byte layout from the legacy 432-byte one (spec/vqf.md §legacy-header steps
    3–4)."""
    new_problems = candidate_problems(current, current["data_offset"], current["file_len"], size)
    if current["version"] != VERSION_DENSE:  # version 3 always uses the current layout
        if new_problems:
            _layout_error("current layout: " + "; ".join(new_problems))
        return "current"
    old_problems = candidate_problems(current, legacy["data_offset"], legacy["file_len"], size)
    new_ok, old_ok = not new_problems, not old_problems
    if new_ok and not old_ok:
        return "current"
    if old_ok and not new_ok:
        if current["flags"] & (VQFFlag.ENC | VQFFlag.SIGNED):
            raise UnsupportedError(
                "vqf.header.legacy_protected",
                "legacy 432-byte header with ENC or SIGNED is unsupported",
                offset=8,
                path="header.flags",
            )
        return "legacy"
    if new_ok and old_ok:
        _layout_error("both the current and the legacy (data_offset, file_len) pairs are valid")
    tag_len = trailer_bytes(bool(current["flags"] & VQFFlag.ENC))
    if _only_short(new_problems) and current["file_len"] + tag_len > size:
        # the current header is sound but promises more bytes than there are: say so plainly
        _layout_error(
            truncated(current["file_len"] + tag_len, size, "header file_len + trailer"), ""
        )
    _layout_error(f"current: {'; '.join(new_problems)}; legacy: {'; '.join(old_problems)}")


def _only_short(problems: list[str]) -> bool:
    """Every problem is one a cut-off file causes (the size checks of spec/vqf.md
    §legacy-header step 3)."""
    return all("file size" in problem for problem in problems)


def _layout_error(detail: str, prefix: str = "header layout undetermined: ") -> NoReturn:
    raise MalformedError(
        "vqf.header.layout",
        prefix + detail,
        offset=field_offset(VQFHeader, "data_offset"),
        path="header.data_offset",
    )


def _normalise(raw: Any, layout: str, legacy_tail: bytes) -> Header:
    arch = {name: raw["arch"][name] for name in ARCH_FIELD_NAMES if name in raw["arch"]}
    for name in MOE_FIELD_NAMES:
        # spec/vqf.md §legacy-header step 4: zero the four MoE fields of a legacy file
        arch.setdefault(name, 0)
    for name in ("vis_ds_idx", "mrope_sections"):
        arch[name] = list(arch[name])
    sig = {k: v for k, v in raw["sig"].items() if not k.startswith("_")}
    return Header(
        layout=layout,
        version=raw["version"],
        flags=raw["flags"],
        n_tensors=raw["n_tensors"],
        arch=arch,
        pad_arch=raw["pad_arch"],
        data_offset=raw["data_offset"],
        file_len=raw["file_len"],
        enc_iv=raw["enc_iv"],
        enc_rsvd=raw["enc_rsvd"],
        sig=sig,
        legacy_tail=legacy_tail,
    )


def read_directory(view: memoryview, n_tensors: int) -> list[Entry]:
    """n × VQFTensor at 448; the count was bounds-checked against the file by read_header."""
    entries = []
    for i in range(n_tensors):
        offset = DIRECTORY_OFFSET + ENTRY_BYTES * i
        raw = parse_record(
            VQFTensor, view, offset, rule="vqf.directory.bounds", path=f"directory[{i}]"
        )
        entries.append(
            Entry(
                index=i,
                name=decode_name(raw["name"]),
                name_field=raw["name"],
                qtype=raw["qtype"],
                rows=raw["rows"],
                cols=raw["cols"],
                pad=raw["pad"],
                offset=raw["offset"],
                bytes=raw["bytes"],
            )
        )
    return entries


def require_in_range(e: Entry, file_len: int) -> None:
    """offset + bytes must not exceed file_len (spec/vqf.md §loader-chain step 12; computed without
    u64 wrap)."""
    if e.offset + e.bytes > file_len:
        raise InvalidError(
            "vqf.directory.tensor_range",
            f"tensor {e.name!r} [{e.offset}, {e.offset + e.bytes}) is out of range "
            f"(file_len {file_len})",
            offset=e.entry_offset + _ENTRY_OFFSET_FIELD,
            path=f"directory[{e.index}].offset",
        )


_ENTRY_OFFSET_FIELD = field_offset(VQFTensor, "offset")


def _arch_offset(name: str) -> int:
    return arch_field_offset(VQFHeader, name)
