"""The error hierarchy and the violation record shared by every format (spec/README.md, "Errors").

Errors are part of the contract, so they live in `spec/`: the conformance corpus names the class
and the rule id of every invalid case, and other implementations map their own failures onto the
same small, closed set of class names (`ERROR_CLASSES`).

Every error carries
  * `rule`   -- a stable dotted rule id such as ``vqf.header.magic``;
  * `offset` -- the absolute byte offset the rule concerns, or None when no byte is to blame;
  * `path`   -- the field or JSON path, such as ``directory[3].offset`` or ``objects[2].bytes``;
  * `detail` -- a short lowercase phrase; its text is informative, the rule id is contractual.

Our own bugs are never folded into this hierarchy: they stay `AssertionError`/`RuntimeError`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: what a strict validator lists and what an error carries."""

    rule: str
    detail: str
    offset: int | None = None
    path: str | None = None
    error_class: str = "InvalidError"

    def __str__(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        suffix = f" ({', '.join(where)})" if where else ""
        return f"[{self.rule}] {self.detail}{suffix}"


class WeightfileError(ValueError):
    """Root of every error raised for bad input."""

    def __init__(
        self,
        rule: str,
        detail: str,
        *,
        offset: int | None = None,
        path: str | None = None,
    ) -> None:
        self.rule = rule
        self.detail = detail
        self.offset = offset
        self.path = path
        super().__init__(str(self.violation))

    @property
    def violation(self) -> Violation:
        return Violation(self.rule, self.detail, self.offset, self.path, type(self).__name__)

    @classmethod
    def from_violation(cls, v: Violation) -> WeightfileError:
        """Raise-ready error of the class the violation names."""
        return ERROR_CLASSES[v.error_class](v.rule, v.detail, offset=v.offset, path=v.path)


class MalformedError(WeightfileError):
    """The bytes cannot be decoded: truncated, bad magic, a length or count out of bounds."""


class InvalidError(WeightfileError):
    """The bytes decode but break a rule: overlap, misalignment, duplicate name, bad padding."""


class ChecksumError(InvalidError):
    """A stored checksum or tag does not match the covered bytes."""


class UnsupportedError(WeightfileError):
    """Well-formed input that uses a registered feature this implementation does not handle."""


class NotFoundError(WeightfileError, LookupError):
    """A name asked for (a tensor, an object, a binding) is not in the file."""


class DestinationExistsError(WeightfileError, FileExistsError):
    """A writer refused to replace an existing file (pass overwrite=True to allow it)."""


class ClosedError(WeightfileError):
    """A read of a file (or file set) after `close()`; a ValueError, as Python's own reads of a
    closed file are."""


class FileAccessError(MalformedError, OSError):
    """A file that cannot be read or written safely: missing, not a regular file, unreadable, a
    symlink loop, too large to map, shortened after it was opened, or an OS failure of a writer
    (spec/ninfer3.md §safe-files). It is an `OSError` too, so callers that handle OS failures keep
    doing so; conformance reports it as ``MalformedError``."""

    def __init__(
        self,
        rule: str,
        detail: str,
        *,
        offset: int | None = None,
        path: str | None = None,
        errno: int | None = None,
    ) -> None:
        super().__init__(rule, detail, offset=offset, path=path)
        self.errno = errno
        self.strerror = detail
        self.filename = path

    def __str__(self) -> str:  # ours, not OSError's "[Errno n] ..."
        return str(self.violation)

    @property
    def violation(self) -> Violation:
        return Violation(self.rule, self.detail, self.offset, self.path, "MalformedError")


#: The closed set of class names other implementations report (conformance/README.md).
ERROR_CLASSES: dict[str, type[WeightfileError]] = {
    cls.__name__: cls
    for cls in (
        MalformedError,
        InvalidError,
        ChecksumError,
        UnsupportedError,
        NotFoundError,
        DestinationExistsError,
        ClosedError,
    )
}
