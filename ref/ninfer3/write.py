"""The `.ninfer` v3 writer: streaming object writes and atomic publication (spec/ninfer3.md
§writer).

Every file is a hidden temp file in the target directory, `ftruncate`d to its final size (so
unwritten bytes are zeros, and sparse) with its header (and, for the entry, the JSON) written first.
Object bytes arrive in chunks, in order, and are mapped through spec/ninfer3.md §range-reads, so a
model never has to be in memory at once. `finish` checks coverage and sizes, syncs, and hard-links
the temp files to their names, continuation volumes first and the entry last; a name that already
exists is never replaced. `abort` removes every temp file and every file already published.
"""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from weightfile.ref.fileio import read_head
from weightfile.ref.ninfer3 import read  # read.MAX_JSON_BYTES: the one definition of the cap
from weightfile.ref.ninfer3.directory import validate_directory
from weightfile.ref.ninfer3.jsontext import parse_json
from weightfile.ref.ninfer3.plan import ObjectSpec, layout_directory, plan_objects
from weightfile.ref.ninfer3.records import FileEntry
from weightfile.ref.ninfer3.require import fail, require
from weightfile.ref.ninfer3.volumes import map_range, payload_starts
from weightfile.ref.staging import (
    PUBLIC_MODE,
    check_output,
    create_temp,
    os_failures,
    remove_orphans,
    sweep,
)
from weightfile.spec.errors import DestinationExistsError, FileAccessError, UnsupportedError
from weightfile.spec.ninfer3.framing import (
    DEFAULT_LIMIT,
    ENTRY_MAGIC,
    HEADER_BYTES,
    JSON_OFFSET,
    build_continuation_header,
    build_entry_header,
    entry_payload_start,
)


def require_readable_json(json_bytes: int) -> None:
    """Refuse a directory longer than the reader's cap: the file would be written whole and then
    refused at open with `ninfer3.header.json_limit` (spec/ninfer3.md §safe-files)."""
    if json_bytes > read.MAX_JSON_BYTES:
        raise UnsupportedError(
            "ninfer3.writer.json_limit",
            f"the directory JSON is {json_bytes} bytes; readers refuse more than "
            f"{read.MAX_JSON_BYTES}",
            path="json_bytes",
        )


class ArtifactWriter:
    """Write one file set; use as a context manager so an exception aborts everything."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        objects: Sequence[ObjectSpec],
        components: Mapping[str, Any],
        bindings: Mapping[str, Any] | None = None,
        uses: Sequence[Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        limit: int = DEFAULT_LIMIT,
        min_json_bytes: int = 1,
        artifact_id: bytes | None = None,
        overwrite: bool = False,
    ) -> None:
        self.path = Path(path)
        self.overwrite = overwrite  # replace existing regular files (spec/ninfer3.md §writer)
        descriptors = plan_objects(objects)
        payload_bytes = descriptors[-1]["offset"] + descriptors[-1]["bytes"]
        root = {
            "components": dict(components),
            "objects": descriptors,
            "bindings": dict(bindings or {}),
            "uses": list(uses or []),
            "metadata": dict(metadata or {}),
            "provenance": dict(provenance or {}),
        }
        self.json_text, files_table = layout_directory(
            root, payload_bytes, self.path.name, limit, min_json_bytes
        )
        require_readable_json(len(self.json_text))
        # Never publish what the reader would reject at open time.
        self.directory = validate_directory(parse_json(self.json_text), self.path.name)
        self.artifact_id = artifact_id if artifact_id is not None else uuid.uuid4().bytes
        self.files: tuple[FileEntry, ...] = self.directory.files
        self._starts = payload_starts(entry_payload_start(len(self.json_text)), len(self.files))
        self.destinations = [self.path] + [self.path.parent / f["path"] for f in files_table[1:]]
        self._objects = {d["id"]: d for d in descriptors}
        self._written = dict.fromkeys(self._objects, 0)
        self._temps: list[Path] = []
        self._fds: list[int] = []
        self._published: list[Path] = []
        # a killed writer's temporary files, and volumes it published without their entry, go
        # first: so the write that follows a kill -9 succeeds (spec/ninfer3.md §safe-files)
        sweep(self.path.parent)
        self._refuse_existing()
        try:
            self._create_files()
        except BaseException:
            self.abort()
            raise

    # -- setup --------------------------------------------------------------------------------

    def _refuse_existing(self) -> None:
        """Fail before writing anything if any destination exists without `overwrite`, or is
        anything but a regular file (spec/ninfer3.md §writer Publication)."""
        for destination in self.destinations:  # the one output policy (ref/staging.py)
            check_output(destination, self.overwrite, "ninfer3.writer.exists", hint="")

    def _create_files(self) -> None:
        """Hidden temp files at final size (zero-filled, sparse), headers and JSON written."""
        for i, destination in enumerate(self.destinations):
            temp, fd = create_temp(destination, PUBLIC_MODE)  # locked while this writer lives
            self._temps.append(temp)
            self._fds.append(fd)
            with os_failures(temp, "write"):
                os.ftruncate(fd, self._starts[i] + self.files[i].payload_bytes)
                if i == 0:
                    header = build_entry_header(len(self.json_text), self.artifact_id)
                    os.pwrite(fd, header, 0)
                    os.pwrite(fd, self.json_text, JSON_OFFSET)
                else:
                    os.pwrite(fd, build_continuation_header(i, self.artifact_id), 0)

    @property
    def object_ids(self) -> list[str]:
        """Planned object ids, in payload order."""
        return list(self._objects)

    def object_bytes(self, object_id: str) -> int:
        """The planned `bytes` of `object_id`."""
        return self._objects[object_id]["bytes"]

    def descriptor(self, object_id: str) -> dict[str, Any]:
        """The planned descriptor (offset, bytes, ...) of `object_id`."""
        return dict(self._objects[object_id])

    # -- payload ------------------------------------------------------------------------------

    def write(self, object_id: str, chunk: bytes | bytearray | memoryview) -> None:
        """Append the next `len(chunk)` bytes of `object_id` (streaming, in object order)."""
        start = self._advance(object_id, len(chunk))
        view = memoryview(chunk).cast("B")
        try:
            for i, source, dest, count in map_range(self.files, self._starts, start, len(view)):
                with os_failures(self._temps[i], "write"):
                    os.pwrite(self._fds[i], view[dest : dest + count], source)
        except BaseException:
            self.abort()  # a failed write leaves nothing, even if the caller never exits
            raise

    def write_zeros(self, object_id: str, count: int) -> None:
        """Account for the next `count` bytes of `object_id` as zeros, which the files already
        hold after `ftruncate`; nothing is written, so the files stay sparse."""
        self._advance(object_id, count)

    def _advance(self, object_id: str, count: int) -> int:
        """Logical start of the next `count` bytes; each byte is covered exactly once."""
        self._require_open()
        descriptor = self._objects.get(object_id)
        if descriptor is None:
            fail("ninfer3.object.unknown", f"no object {object_id!r}")
        done = self._written[object_id]
        require(
            0 <= count <= descriptor["bytes"] - done,
            "ninfer3.writer.coverage",
            f"{count} more bytes overflow {object_id!r} ({done} of {descriptor['bytes']} written)",
            object_id,
        )
        self._written[object_id] = done + count
        return descriptor["offset"] + done

    # -- publication --------------------------------------------------------------------------

    def finish(self) -> list[Path]:
        """Check coverage and sizes, sync, publish parts first and the entry last
        (spec/ninfer3.md §writer)."""
        self._require_open()
        try:
            for object_id, done in self._written.items():
                want = self._objects[object_id]["bytes"]
                require(
                    done == want,
                    "ninfer3.writer.coverage",
                    f"{object_id!r} has {done} of {want} bytes",
                    object_id,
                )
            for i, fd in enumerate(self._fds):
                want = self._starts[i] + self.files[i].payload_bytes
                if os.fstat(fd).st_size != want:  # our own bug, not bad input
                    raise RuntimeError(f"temp file {i} has the wrong size")
                with os_failures(self._temps[i], "sync"):
                    os.fdatasync(fd)
            order = [*range(1, len(self.destinations)), 0]
            replaced = self._replaced_artifact_id()
            for i in order:
                if self.overwrite:  # an existing regular file only, checked again now
                    self._replace(i)
                    continue
                try:
                    with os_failures(self.destinations[i], "publish"):
                        os.link(self._temps[i], self.destinations[i])
                except DestinationExistsError:
                    raise
                except FileAccessError as exc:
                    if exc.errno != errno.EEXIST:
                        raise
                    raise DestinationExistsError(
                        "ninfer3.writer.exists",
                        "destination appeared while writing",
                        path=str(self.destinations[i]),
                    ) from None
                self._published.append(self.destinations[i])
        except BaseException:
            self.abort()
            raise
        # the temporary names go while the locks are held, so no sweep sees them unlocked
        for temp in self._temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        self._close_fds()
        self._temps.clear()
        self._published.clear()  # published for good: a later abort() must not remove them
        if replaced is not None:  # the replaced set's volumes beyond the new set's go too
            remove_orphans(self.path.parent, self.path.name, replaced)
        return list(self.destinations)

    def _replaced_artifact_id(self) -> bytes | None:
        """The artifact_id of the entry `overwrite` is about to replace (None: nothing there)."""
        if not self.overwrite:
            return None
        try:
            head = read_head(self.path, HEADER_BYTES)
        except OSError:
            return None
        return head[16:32] if head[:8] == ENTRY_MAGIC and len(head) >= 32 else None

    def _replace(self, i: int) -> None:
        """Publish file `i` over an existing regular file (the output policy, ref/staging.py)."""
        destination = self.destinations[i]
        check_output(destination, True, "ninfer3.writer.exists", hint="")
        with os_failures(destination, "publish"):
            os.replace(self._temps[i], destination)
        self._published.append(destination)  # its temporary name is gone: unlinks skip it

    def _require_open(self) -> None:
        if not self._temps:  # a caller bug, not bad input
            raise RuntimeError("this writer has already finished or aborted")

    def abort(self) -> None:
        """Remove every temp file and every file already published (spec/ninfer3.md §writer)."""
        for path in self._published + self._temps:  # volumes first, while the locks are held
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._close_fds()
        self._temps.clear()
        self._published.clear()

    def _close_fds(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._temps:  # an exception, or the caller never called finish()
            self.abort()


def write_artifact(
    path: str | os.PathLike[str],
    data: Mapping[str, bytes | Iterable[bytes] | None],
    **directory: Any,
) -> list[Path]:
    """Write a whole file set: `data[id]` is the object's bytes, an iterable of chunks, or None
    for all zeros. Other keyword arguments go to `ArtifactWriter`."""
    with ArtifactWriter(path, **directory) as writer:
        for object_id in data:
            if object_id not in writer.object_ids:
                fail("ninfer3.object.unknown", f"data for unplanned object {object_id!r}")
        for spec in directory["objects"]:
            content = data.get(spec.id)
            if content is None:
                writer.write_zeros(spec.id, writer.object_bytes(spec.id))
            elif isinstance(content, bytes | bytearray | memoryview):
                writer.write(spec.id, content)
            else:
                for chunk in content:
                    writer.write(spec.id, chunk)
        return writer.finish()
