"""Opening, mapping and re-checking input files safely, for both containers (spec/ninfer3.md
§safe-files).

Every file a reader touches (a VQF file, a `.ninfer` entry, a continuation volume, the few bytes
`sniff` looks at) is opened here: `O_NONBLOCK` so that a FIFO or a device cannot block the open,
then `fstat` on the open descriptor, and anything that is not a regular file is refused before a
byte is read. Every OS failure becomes a `FileAccessError` (ours, and still an `OSError`) naming
the rule and the path. A mapped file is re-checked with `fstat` before each access is handed out,
so a file shortened after it was opened is reported instead of faulting (SIGBUS) later.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from pathlib import Path

from weightfile.spec.errors import FileAccessError

#: Extra flags every read-only open uses where the platform has them.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS |= getattr(os, "O_NOCTTY", 0)

_WHY = {
    errno.ENOENT: "no such file",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop)",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a component of the path is not a directory",
    errno.ENXIO: "not a regular file (a socket or a device without a reader)",
}


def describe(exc: OSError) -> str:
    """A short lowercase phrase for an OS failure (ours, not `[Errno n] ...`)."""
    if exc.errno in _WHY:
        return _WHY[exc.errno]
    return (exc.strerror or type(exc).__name__).lower()


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def access_error(exc: OSError, path: str | os.PathLike[str], doing: str) -> FileAccessError:
    """Our error for an OS failure while `doing` something to `path` (spec/ninfer3.md
    §safe-files)."""
    rule = "format.file.missing" if exc.errno == errno.ENOENT else "format.file.unreadable"
    if exc.errno == errno.ENXIO:
        rule = "format.file.not_regular"
    return FileAccessError(
        rule, f"cannot {doing}: {describe(exc)}", path=str(path), errno=exc.errno
    )


def open_regular(
    path: str | os.PathLike[str],
    *,
    shown: str | os.PathLike[str] | None = None,
    nofollow: bool = False,
) -> tuple[int, int]:
    """(fd, size) of `path` opened read-only; a non-regular file or any OS failure is a
    `FileAccessError` naming `shown` (default `path`) and leaves no descriptor open
    (spec/ninfer3.md §safe-files). `nofollow` refuses a final symlink (for an already resolved
    path)."""
    name = str(path if shown is None else shown)
    flags = _READ_FLAGS | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise access_error(exc, name, "open") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise access_error(exc, name, "stat") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise FileAccessError(
            "format.file.not_regular",
            f"{kind_of(info.st_mode)}, not a regular file",
            path=name,
            errno=errno.EISDIR if stat.S_ISDIR(info.st_mode) else None,
        )
    return fd, info.st_size


def pread_exact(fd: int, count: int, offset: int, path: str | os.PathLike[str]) -> bytes:
    """`count` bytes at `offset` (fewer at end of file); an OS failure is ours."""
    try:
        return os.pread(fd, count, offset)
    except OSError as exc:
        raise access_error(exc, path, "read") from None


def read_head(path: str | os.PathLike[str], count: int) -> bytes:
    """The first `count` bytes of a regular file (fewer if it is shorter)."""
    fd, _ = open_regular(path)
    try:
        return pread_exact(fd, count, 0, path)
    finally:
        os.close(fd)


def map_readonly(fd: int, size: int, path: str | os.PathLike[str]) -> mmap.mmap:
    """A read-only map of the first `size` bytes; address-space exhaustion is ours
    (`format.file.address_space`), not a raw ENOMEM or MemoryError."""
    try:
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except (MemoryError, OverflowError) as exc:
        raise FileAccessError(
            "format.file.address_space",
            f"cannot map {size} bytes: {type(exc).__name__.lower()}",
            path=str(path),
            errno=errno.ENOMEM,
        ) from None
    except OSError as exc:
        if exc.errno == errno.ENOMEM:
            raise FileAccessError(
                "format.file.address_space",
                f"cannot map {size} bytes: out of address space or memory",
                path=str(path),
                errno=exc.errno,
            ) from None
        raise access_error(exc, path, "map") from None


def require_unshrunk(fd: int, size: int, path: str | os.PathLike[str]) -> None:
    """Refuse to hand out a view of a map whose file is now shorter than `size` bytes: reading a
    page past the new end would kill the process with SIGBUS (spec/ninfer3.md §safe-files)."""
    try:
        now = os.fstat(fd).st_size
    except OSError as exc:
        raise access_error(exc, path, "stat") from None
    if now < size:
        raise FileAccessError(
            "format.file.shrunk",
            f"the file was shortened to {now} of {size} bytes after it was opened",
            path=str(path),
            offset=now,
        )


def resolve_inside(volume: Path, entry: Path) -> Path | None:
    """`volume` with every symlink followed when it lies in the folder of the entry (every
    symlink followed), else None (spec/ninfer3.md §safe-files). A loop resolves to itself and fails
    when opened."""
    real = Path(os.path.realpath(volume))
    return real if real.parent == Path(os.path.realpath(entry)).parent else None
