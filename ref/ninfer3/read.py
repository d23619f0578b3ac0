"""Open a `.ninfer` v3 file set and read from it (spec/ninfer3.md §header-checks, §range-reads,
§validation).

`open_artifact` follows the entry file's byte order: header, json_bytes, JSON text, the directory
checks of spec/ninfer3.md §validation in order, then the entry length. Everything after that is
lazy: continuation volumes open on the first read that needs them, and an object's format, layout,
size and alignment are checked only when it is requested.

`open_for_verify` makes the same checks for `verify`: a header or JSON failure still ends them,
but past the JSON every broken directory rule is recorded (directory.walk_directory).
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from weightfile.ref.fileio import map_readonly, open_regular, pread_exact
from weightfile.ref.ninfer3.bindings import (
    DIVISOR_ROLE,
    HADAMARD_ROLE,
    SIGN_WORDS,
    ElementRange,
    bind_parameter,
    check_auxiliary_roles,
    divisor_element,
    hadamard_ranges,
)
from weightfile.ref.ninfer3.directory import walk_directory
from weightfile.ref.ninfer3.jsontext import parse_json
from weightfile.ref.ninfer3.objects import check_object
from weightfile.ref.ninfer3.records import Binding, Component, Directory, ObjectEntry, Use
from weightfile.ref.ninfer3.require import Sink, attempt, fail, require
from weightfile.ref.ninfer3.volumes import FileSet
from weightfile.spec.errors import MalformedError, UnsupportedError, Violation, WeightfileError
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT
from weightfile.spec.ninfer3.framing import (
    HEADER_BYTES,
    JSON_OFFSET,
    entry_payload_start,
    parse_entry_header,
)
from weightfile.spec.records import truncated

#: The largest JSON directory this reader reads (spec/ninfer3.md §safe-files): json_bytes is checked
#: against it before a byte of the text is read, so a sparse entry claiming gigabytes of JSON
#: costs nothing. A 50,000-part binding's directory is a few MB.
MAX_JSON_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class EntryHeader:
    """The decoded 32-byte entry header (spec/ninfer3.md §entry-header)."""

    json_bytes: int
    artifact_id: bytes


class Artifact:
    """An opened file set: the validated directory plus lazy, checked reads."""

    def __init__(self, path: Path, header: EntryHeader, directory: Directory, files: FileSet):
        self.path = path
        self.header = header
        self.directory = directory
        self.files = files

    # -- bytes --------------------------------------------------------------------------------

    def read_range(self, offset: int, length: int) -> memoryview:
        """Logical payload bytes [offset, offset+length) (spec/ninfer3.md §range-reads)."""
        return self.files.read(offset, length)

    def object(self, object_id: str) -> ObjectEntry:
        """The descriptor of `object_id` after its deferred checks (spec/ninfer3.md §validation)."""
        entry = self.directory.objects_by_id.get(object_id)
        if entry is None:
            fail("ninfer3.object.unknown", f"no object {object_id!r}")
        check_object(entry)
        return entry

    def object_bytes(self, object_id: str) -> memoryview:
        """The checked object's encoded bytes, exactly `bytes` long (spec/ninfer3.md §objects)."""
        entry = self.object(object_id)
        return self.read_range(entry.offset, entry.bytes)

    # -- components and resources -------------------------------------------------------------

    def component(self, component_id: str) -> Component:
        """A selected component: present, and targeting text unless it is text
        (spec/ninfer3.md §component, §validation)."""
        found = self.directory.components.get(component_id)
        require(
            found is not None,
            "ninfer3.binder.component",
            f"component {component_id!r} is not in the file",
            "components",
        )
        assert found is not None
        require(
            component_id == TEXT_COMPONENT or found.target == TEXT_COMPONENT,
            "ninfer3.binder.component_target",
            f"component {component_id!r} does not target text",
            f"components.{component_id}.target",
        )
        return found

    def resource(self, role: str, component_id: str = TEXT_COMPONENT) -> memoryview:
        """The bytes of a component's resource role, unmodified (spec/ninfer3.md §component,
        §raw-bytes)."""
        component = self.component(component_id)
        object_id = component.resources.get(role)
        require(
            object_id is not None,
            "ninfer3.binder.resource",
            f"component {component_id!r} has no resource {role!r}",
            f"components.{component_id}.resources",
        )
        assert object_id is not None
        return self.object_bytes(object_id)

    # -- bindings and uses --------------------------------------------------------------------

    def binding(self, name: str) -> Binding:
        """The Binding of a logical parameter; a missing name is a binder error
        (spec/ninfer3.md §validation)."""
        found = self.directory.bindings.get(name)
        require(found is not None, "ninfer3.binder.parameter", f"no binding {name!r}", "bindings")
        assert found is not None
        return found

    def bind(self, name: str, shape: Sequence[int]) -> list[ElementRange]:
        """Element ranges of parameter `name` checked against its expected `shape`
        (spec/ninfer3.md §binding)."""
        ranges = bind_parameter(self.binding(name), shape, self.directory.objects_by_id)
        for object_id in dict.fromkeys(r.object_id for r in ranges):
            self.object(object_id)
        return ranges

    def activation_divisor(self, use: Use) -> float | None:
        """The Use's activation_input_divisor: one finite, positive FP32 element
        (spec/ninfer3.md §use)."""
        check_auxiliary_roles(use)
        binding = use.auxiliaries.get(DIVISOR_ROLE)
        if binding is None:
            return None
        element = divisor_element(binding, self.directory.objects_by_id)
        entry = self.object(element.object_id)
        (value,) = struct.unpack("<f", self.read_range(entry.offset + 4 * element.begin, 4))
        require(
            math.isfinite(value) and value > 0,
            "ninfer3.binder.divisor",
            f"divisor {value!r} is not finite and > 0",
            binding.path,
        )
        return value

    def hadamard_signs(self, use: Use, parameter_shape: Sequence[int]) -> list[int] | None:
        """The Use's hadamard_signs as +1/−1 ints, K of them (spec/ninfer3.md §use)."""
        check_auxiliary_roles(use)
        binding = use.auxiliaries.get(HADAMARD_ROLE)
        if binding is None:
            return None
        signs: list[int] = []
        for r in hadamard_ranges(binding, parameter_shape, self.directory.objects_by_id):
            entry = self.object(r.object_id)
            raw = self.read_range(entry.offset + 2 * r.begin, 2 * r.count)
            for (word,) in struct.iter_unpack("<H", raw):
                require(
                    word in SIGN_WORDS,
                    "ninfer3.binder.hadamard",
                    f"sign word 0x{word:04X} is neither +1 nor -1",
                    binding.path,
                )
                signs.append(SIGN_WORDS[word])
        return signs

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        self.files.close()

    def __enter__(self) -> Artifact:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_artifact(path: str | os.PathLike[str]) -> Artifact:
    """Open an entry file and run every open-time check in spec/ninfer3.md §validation order
    (spec/ninfer3.md §header-checks steps 1-5)."""
    artifact = _open(Path(path), None)
    assert artifact is not None  # without a sink every failure raises
    return artifact


def open_for_verify(path: str | os.PathLike[str], sink: list[Violation]) -> Artifact | None:
    """The open-time checks, each broken rule appended to `sink`: framing and JSON failures
    end them, directory failures do not (module docstring); None when nothing can be opened."""
    try:
        return _open(Path(path), sink)
    except WeightfileError as exc:  # header, json_bytes or JSON text: nothing after can be read
        sink.append(exc.violation)
        return None


def _open(entry_path: Path, sink: Sink) -> Artifact | None:
    """The open in byte order; with a sink, the directory and entry length are collected. The
    entry is a regular file (spec/ninfer3.md §safe-files); its descriptor stays open in the
    FileSet."""
    fd, size = open_regular(entry_path)
    try:
        header = read_entry_header(fd, entry_path)
        check_json_bytes(header.json_bytes, size)
        doc = parse_json(pread_exact(fd, header.json_bytes, JSON_OFFSET, entry_path))
        directory = walk_directory(doc, entry_path.name, sink)
        if directory is None:
            os.close(fd)
            return None
        start = entry_payload_start(header.json_bytes)
        attempt(sink, check_entry_length, size, start, directory)
        entry_map = map_readonly(fd, size, entry_path)
    except BaseException:
        os.close(fd)
        raise
    files = FileSet(entry_path, entry_map, fd, start, directory.files, header.artifact_id)
    return Artifact(entry_path, header, directory, files)


def read_entry_header(fd: int, path: Path) -> EntryHeader:
    """The 32-byte header: long enough, magic NINFER\\0\\3 (spec/ninfer3.md §header-checks steps
    1-2)."""
    parsed = parse_entry_header(pread_exact(fd, HEADER_BYTES, 0, path))
    return EntryHeader(parsed.json_bytes, parsed.artifact_id)


def check_json_bytes(json_bytes: int, entry_size: int) -> None:
    """1 <= json_bytes <= entry size − 32, checked before reading the text (spec/ninfer3.md
    §header-checks step 3)."""
    room = entry_size - HEADER_BYTES
    if room >= json_bytes > MAX_JSON_BYTES:  # a (sparse) file that big: refuse before reading
        raise UnsupportedError(
            "ninfer3.header.json_limit",
            f"json_bytes {json_bytes} exceeds this reader's limit of {MAX_JSON_BYTES} bytes",
            offset=8,
            path="json_bytes",
        )
    if not 1 <= json_bytes <= room:
        # more JSON promised than the file holds: most often a cut-off copy, so say that
        detail = (
            f"json_bytes {json_bytes} outside [1, {room}]"
            if json_bytes < 1
            else truncated(json_bytes, room, "the JSON text json_bytes names")
        )
        raise MalformedError(
            "ninfer3.header.json_bytes",
            detail,
            offset=8,
            path="json_bytes",
        )


def check_entry_length(size: int, payload_start: int, directory: Directory) -> None:
    """entry size == align_up(32 + json_bytes, 4096) + files[0].payload_bytes (spec/ninfer3.md
    §header-checks step 5)."""
    want = payload_start + directory.files[0].payload_bytes
    if size != want:
        raise MalformedError(
            "ninfer3.entry.length", f"entry has {size} bytes, directory says {want}", offset=0
        )
