"""The file set: the entry and its lazily opened continuation volumes (spec/ninfer3.md
§header-checks, §files-table, §logical-payload, §range-reads).

A continuation volume is opened the first time a range read touches it, and its header and
length are checked then; a missing volume fails only the reads that need it. Each file is
memory-mapped so a range inside one file is returned as a zero-copy `memoryview`; its descriptor
stays open so every read first re-checks that the file was not shortened (spec/ninfer3.md
§safe-files).
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import mmap
import os
from pathlib import Path

from weightfile.ref.fileio import (
    map_readonly,
    open_regular,
    pread_exact,
    require_unshrunk,
    resolve_inside,
)
from weightfile.ref.ninfer3.records import FileEntry
from weightfile.spec.errors import ClosedError, FileAccessError, InvalidError, MalformedError
from weightfile.spec.ninfer3.errors import ContinuationMissingError
from weightfile.spec.ninfer3.framing import (
    HEADER_BYTES,
    PART_PAYLOAD_START,
    parse_continuation_header,
)

Segment = tuple[int, int, int, int]  # (file i, source file offset, destination offset, bytes)


def map_range(
    files: tuple[FileEntry, ...], file_payload_start: list[int], offset: int, length: int
) -> list[Segment]:
    """spec/ninfer3.md §range-reads: for each file i meeting [off, off+len) at [a, b): (i, start_i +
    a − P_i, a − off, b − a), starting from the largest i with P_i <= off and walking forward."""
    total = files[-1].logical_end
    if length < 0 or offset < 0 or offset + length > total:
        raise InvalidError(
            "ninfer3.range.bounds",
            f"[{offset}, {offset + length}) is outside the {total}-byte payload",
        )
    starts = [f.logical_start for f in files]
    out = []
    i = bisect.bisect_right(starts, offset) - 1
    end = offset + length
    while i < len(files) and starts[i] < end:
        a = max(offset, starts[i])
        b = min(end, files[i].logical_end)
        out.append((i, file_payload_start[i] + (a - starts[i]), a - offset, b - a))
        i += 1
    return out


def shown_name(name: str, limit: int = 60) -> str:
    """A volume name for a message: quoted, and cut to `limit` characters when longer (a name
    is any ID, so it may be thousands of characters)."""
    if len(name) <= limit:
        return repr(name)
    return f"{name[:limit]!r}... ({len(name)} characters)"


def payload_starts(entry_payload_start: int, count: int) -> list[int]:
    """file_payload_start(i): the entry's payload start for i = 0, else 4096
    (spec/ninfer3.md §logical-payload)."""
    return [entry_payload_start] + [PART_PAYLOAD_START] * (count - 1)


class FileSet:
    """Logical payload [0, Σ payload_bytes) spread over files (spec/ninfer3.md §logical-payload)."""

    def __init__(
        self,
        entry_path: Path,
        entry_map: mmap.mmap,
        entry_fd: int,
        entry_payload_start: int,
        files: tuple[FileEntry, ...],
        artifact_id: bytes,
    ) -> None:
        self.entry_path = entry_path
        self.files = files
        self.artifact_id = artifact_id
        self.payload_bytes = files[-1].logical_end
        self._payload_start = payload_starts(entry_payload_start, len(files))
        self._maps: dict[int, mmap.mmap] = {0: entry_map}
        #: the open descriptor under each map, for the size re-check before every access
        self._fds: dict[int, int] = {0: entry_fd}
        self._entry_size = len(entry_map)
        self.closed = False

    def volume_path(self, index: int) -> Path:
        """Where files[index] lives: resolved relative to the entry's directory
        (spec/ninfer3.md §files-table)."""
        name = self.files[index].path
        return self.entry_path if name is None else self.entry_path.parent / name

    def file_bytes(self, index: int) -> int:
        """Declared size of files[index]: payload start + payload_bytes (spec/ninfer3.md
        §entry-header, §volume-header)."""
        return self._payload_start[index] + self.files[index].payload_bytes

    def volume(self, index: int) -> mmap.mmap:
        """The mapped file, opening and checking a continuation volume on first use
        (spec/ninfer3.md §header-checks step 6)."""
        if self.closed:  # else the entry itself would be reopened as if it were a continuation
            raise ClosedError(
                "ninfer3.range.closed", f"{self.entry_path.name} is closed", path=f"files[{index}]"
            )
        if index not in self._maps:
            self._maps[index] = self._open_continuation(index)
        return self._maps[index]

    def _open_continuation(self, index: int) -> mmap.mmap:
        """Inside the entry's folder, a regular file, header present, magic, part_index ==
        index, same artifact_id, exact length (spec/ninfer3.md §header-checks step 6,
        §safe-files)."""
        path = self.volume_path(index)
        where = f"files[{index}]"
        real = resolve_inside(path, self.entry_path)
        if real is None:
            raise FileAccessError(
                "ninfer3.part.outside",
                f"continuation volume {path.name!r} resolves outside the entry's folder",
                path=where,
            )
        try:
            fd, size = open_regular(real, shown=path, nofollow=True)
        except FileAccessError as exc:
            # a name longer than the system's NAME_MAX can never be present: missing as well
            if exc.errno in (errno.ENOENT, errno.ENAMETOOLONG):
                why = "is absent" if exc.errno == errno.ENOENT else "is longer than a file name"
                raise ContinuationMissingError(
                    "ninfer3.part.missing",
                    f"continuation volume {shown_name(path.name)} {why}",
                    path=where,
                ) from None
            raise FileAccessError(exc.rule, f"{path.name}: {exc.detail}", path=where) from None
        try:
            header = parse_continuation_header(pread_exact(fd, HEADER_BYTES, 0, path), path=where)
            if header.part_index != index:
                raise InvalidError(
                    "ninfer3.part.index",
                    f"part_index {header.part_index} in volume {index}",
                    offset=8,
                    path=where,
                )
            if header.artifact_id != self.artifact_id:
                raise InvalidError(
                    "ninfer3.part.artifact_id",
                    f"artifact_id {header.artifact_id.hex()} != {self.artifact_id.hex()}",
                    offset=16,
                    path=where,
                )
            want = self.file_bytes(index)
            if size != want:
                raise MalformedError(
                    "ninfer3.part.length", f"size {size} != declared {want}", offset=0, path=where
                )
            mapped = map_readonly(fd, want, path)
        except BaseException:
            os.close(fd)
            raise
        self._fds[index] = (
            fd  # kept open: every later access re-checks the size (spec/ninfer3.md §safe-files)
        )
        return mapped

    def _require_whole(self, index: int) -> None:
        """The file under map `index` is still as long as it was when checked
        (spec/ninfer3.md §safe-files)."""
        size = self.file_bytes(index) if index else self._entry_size
        require_unshrunk(self._fds[index], size, self.volume_path(index))

    def segments(self, offset: int, length: int) -> list[Segment]:
        """spec/ninfer3.md §range-reads mapping of logical [offset, offset+length) onto this file
        set."""
        return map_range(self.files, self._payload_start, offset, length)

    def read(self, offset: int, length: int) -> memoryview:
        """Logical bytes [offset, offset+length); zero-copy when they lie inside one file."""
        segments = self.segments(offset, length)
        if len(segments) == 1:
            i, source, _, count = segments[0]
            volume = self.volume(i)
            self._require_whole(i)
            return memoryview(volume)[source : source + count]
        # Open and check every volume first: only then is `length` backed by real bytes, so
        # a huge declared size never turns into a huge allocation.
        volumes = [self.volume(i) for i, *_ in segments]
        for i, *_ in segments:
            self._require_whole(i)
        buffer = bytearray(length)
        for volume, (_, source, destination, count) in zip(volumes, segments, strict=True):
            buffer[destination : destination + count] = memoryview(volume)[source : source + count]
        return memoryview(buffer)

    def close(self) -> None:
        """Unmap every file; a map still viewed by a caller is left to the garbage collector."""
        for m in self._maps.values():
            with contextlib.suppress(BufferError):  # a caller still holds a zero-copy view
                m.close()
        self._maps.clear()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self.closed = True
