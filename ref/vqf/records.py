"""The records of an open VQF file: the normalised header, the directory entries and the open file
itself (spec/vqf.md §file-layout, §legacy-header, §entry).

They sit below the reader (read.py), the protection layer (protect.py) and the checksum
(fnv1a64.py), which all take them, so none of those modules imports another to name a type.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weightfile.ref.fileio import require_unshrunk
from weightfile.spec.errors import ClosedError, MalformedError, NotFoundError, UnsupportedError
from weightfile.spec.records import parse_record
from weightfile.spec.vqf.constants import DIRECTORY_OFFSET, ENTRY_BYTES
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.header import VQFHeader, VQFHeaderLegacy, field_offset
from weightfile.spec.vqf.placement import directory_end
from weightfile.spec.vqf.trailer import VQFTrailerFNV, VQFTrailerTag


@dataclass(frozen=True, slots=True)
class Header:
    """The header of either layout, normalised as spec/vqf.md §legacy-header step 4 describes."""

    layout: str  # "current" (448 B) or "legacy" (432 B)
    version: int
    flags: int
    n_tensors: int
    arch: dict[str, Any]  # all 45 fields; the MoE tail is zero for legacy files
    pad_arch: bytes
    data_offset: int
    file_len: int
    enc_iv: bytes
    enc_rsvd: bytes
    sig: dict[str, Any]
    legacy_tail: bytes  # [432, 448) of a legacy file; empty for the current layout

    @property
    def encrypted(self) -> bool:
        return bool(self.flags & VQFFlag.ENC)

    @property
    def signed(self) -> bool:
        return bool(self.flags & VQFFlag.SIGNED)

    @property
    def is_moe(self) -> bool:
        """is_moe = MOE flag or version == 3 (spec/vqf.md §loader-chain step 11)."""
        return bool(self.flags & VQFFlag.MOE) or self.version == 3

    def schema_offset(self, name: str) -> int:
        """Absolute offset of a top-level header field in this file's layout."""
        schema = VQFHeader if self.layout == "current" else VQFHeaderLegacy
        return field_offset(schema, name)


@dataclass(frozen=True, slots=True)
class Entry:
    """One directory entry, with where it sits in the file."""

    index: int
    name: str  # visible name: bytes before the first NUL
    name_field: bytes  # the raw 32-byte field
    qtype: int
    rows: int
    cols: int
    pad: bytes
    offset: int
    bytes: int

    @property
    def entry_offset(self) -> int:
        """Absolute offset of this 64-byte record."""
        return DIRECTORY_OFFSET + ENTRY_BYTES * self.index

    @property
    def end(self) -> int:
        return self.offset + self.bytes


@dataclass(eq=False)
class VQFFile:
    """An open VQF file. Close it (or use `with`) to release the map."""

    path: Path
    size: int
    header: Header
    entries: list[Entry]
    _map: mmap.mmap | None = field(repr=False, default=None)
    _view: memoryview | None = field(repr=False, default=None)
    #: ENC files opened with a passphrase: the authenticated plaintext of the data region
    _plain: mmap.mmap | None = field(repr=False, default=None)
    _plain_view: memoryview | None = field(repr=False, default=None)
    #: the descriptor under the map, kept open for the size re-check before each view
    _fd: int | None = field(repr=False, default=None)
    #: which writer kind the pads showed (protect.ONE_STREAM, PER_TENSOR, EITHER), None if unknown
    stream_kind: str | None = None
    #: name -> entry, built once; later duplicates overwrite earlier ones, so the later entry wins
    #: as in the engine (spec/vqf.md §loader-chain step 12)
    _by_name: dict[str, Entry] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name = {e.name: e for e in self.entries}

    @property
    def closed(self) -> bool:
        """True once `close` ran: no byte of the file can be read any more."""
        return self._view is None

    def require_open(self) -> None:
        """Refuse a read of a closed file with our error, not a failed assertion
        (spec/vqf.md §file-layout)."""
        if self.closed:
            raise ClosedError("vqf.file.closed", f"{self.path.name} is closed", path=str(self.path))

    # -- regions (spec/vqf.md §file-layout)
    # ---------------------------------------------------------------------------
    def bytes_at(self, start: int, stop: int) -> memoryview:
        """A zero-copy view of [start, stop), bounds-checked against the file."""
        if not 0 <= start <= stop <= self.size:
            raise MalformedError(
                "vqf.file.range", f"range [{start}, {stop}) outside the file", offset=start
            )
        self.require_open()
        assert self._view is not None
        if (
            self._fd is not None
        ):  # a file shortened since open would fault on access (spec/ninfer3.md §safe-files)
            require_unshrunk(self._fd, self.size, self.path)
        return self._view[start:stop]

    def release_pages(self, start: int, stop: int) -> None:
        """Drop the mapped pages of [start, stop) from this process (a streaming pass is done
        with them): the file stays in the page cache, but the pass's RSS stays bounded."""
        if self._map is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        lo, hi = -(-start // page) * page, stop // page * page
        if lo < hi:
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def directory_bytes(self) -> memoryview:
        return self.bytes_at(DIRECTORY_OFFSET, directory_end(self.header.n_tensors))

    def data_region(self) -> memoryview:
        """[data_offset, file_len): plaintext, or ciphertext for ENC files."""
        return self.bytes_at(self.header.data_offset, self.header.file_len)

    def stored_fnv(self) -> int:
        """The u64 FNV-1a-64 trailer of a plaintext file (spec/vqf.md §fnv-trailer)."""
        if self.header.encrypted:
            raise UnsupportedError(
                "vqf.enc.fnv",
                "encrypted file: its trailer is an HMAC-SM3 tag, not an FNV-1a-64",
                offset=self.header.file_len,
                path="trailer",
            )
        raw = self.bytes_at(self.header.file_len, self.size)
        return parse_record(VQFTrailerFNV, raw, 0, rule="vqf.header.layout", path="trailer")[
            "fnv1a64"
        ]

    def stored_tag(self) -> bytes:
        """The 32-byte HMAC-SM3 tag of an ENC file (spec/vqf.md §sm4-hmac)."""
        raw = self.bytes_at(self.header.file_len, self.size)
        return parse_record(VQFTrailerTag, raw, 0, rule="vqf.header.layout", path="trailer")[
            "hmac_sm3"
        ]

    # -- tensors ----------------------------------------------------------------------------------
    def entry(self, name: str) -> Entry:
        """The entry named `name`; with duplicates the later one wins, as in the engine
        (spec/vqf.md §loader-chain step 12)."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        raise NotFoundError("vqf.directory.name", f"no tensor named {name!r}", path=name)

    def payload(self, entry: Entry | str) -> memoryview:
        """Zero-copy view of a tensor's stored bytes (without its trailing pad)."""
        e = self.entry(entry) if isinstance(entry, str) else entry
        self.require_open()  # before the ENC branch, which would report a missing key instead
        if self.header.encrypted:
            plain = self.plaintext_region()
            base = self.header.data_offset
            if not base <= e.offset <= e.end <= self.header.file_len:
                raise MalformedError(
                    "vqf.file.range",
                    f"range [{e.offset}, {e.end}) outside the data region",
                    offset=e.offset,
                )
            return plain[e.offset - base : e.end - base]
        return self.bytes_at(e.offset, e.end)

    def plaintext_region(self) -> memoryview:
        """[data_offset, file_len) as plaintext: the map itself, or the authenticated copy (ENC)."""
        if not self.header.encrypted:
            return self.data_region()
        if self._plain_view is None:
            raise UnsupportedError(
                "vqf.enc.no_key",
                "encrypted file: give its passphrase (--passphrase-file or VLLM_VQF_KEY) to "
                "authenticate and decrypt it",
                offset=self.header.data_offset,
                path="data",
            )
        return self._plain_view

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        if self._plain_view is not None:
            self._plain_view.release()
            self._plain_view = None
        if self._plain is not None:
            with contextlib.suppress(BufferError):
                self._plain.close()
            self._plain = None
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._map is not None:
            # A caller may still hold a payload view; the map then closes when that view dies.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> VQFFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
