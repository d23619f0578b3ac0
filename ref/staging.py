"""Temporary files of the writers: created locked, swept when their writer is gone
(spec/ninfer3.md §safe-files, "Writers").

Both writers (VQF, `.ninfer`) stage every file as `.<name>.<16 hex digits>.tmp` in the destination
folder (a private intermediate folder gets the same kind of name) and hold an exclusive `flock` on
it for as long as they live. The kernel drops the lock when
the process ends, however it ends (`kill -9` included), so a temporary file whose lock can be
taken belongs to nobody: `sweep` removes those before a write starts, and a killed writer's
leftovers never outlive the next write to the same folder. A live writer's files are never
touched. A `.ninfer` entry's temporary file names its artifact_id, so a sweep that removes one
also removes the continuations its dead writer had already published without the entry. Every
OS failure on the way is `format.file.write`.

The output policy of every command that writes (docs/design.md, "Reliability"): `check_output`
refuses an existing destination without overwrite (`DestinationExistsError`, exit 2) and a
destination that is a symlink, directory, FIFO, device or socket with or without it
(`format.file.destination`, exit 4: never followed, never written into); `staged` / `staged_path`
stage beside it under the one temporary name above, sweep first, and publish by rename (a hard
link when nothing may be replaced), checking the destination again just before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from weightfile.ref.fileio import describe, read_head
from weightfile.spec.errors import DestinationExistsError, FileAccessError, WeightfileError
from weightfile.spec.ninfer3.framing import CONTINUATION_MAGIC, ENTRY_MAGIC, HEADER_BYTES

#: What flock answers on a filesystem that has no such locks.
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}

#: The mode every public output is created with (docs/design.md, "Reliability"): 0644, or less
#: where the umask says so (it is open(2)'s mode). Secrets (a private key, a plaintext before it is
#: encrypted) are `SECRET_MODE`, 0600 whatever the umask.
PUBLIC_MODE = 0o644
SECRET_MODE = 0o600

#: A writer's temporary file: hidden, the destination's name, 16 random hex digits, `.tmp`.
TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{16}\.tmp")


def write_error(exc: OSError, path: str | os.PathLike[str], doing: str) -> FileAccessError:
    """Our error for a writer's OS failure (spec/ninfer3.md §safe-files)."""
    return FileAccessError(
        "format.file.write", f"cannot {doing}: {describe(exc)}", path=str(path), errno=exc.errno
    )


@contextlib.contextmanager
def os_failures(path: str | os.PathLike[str], doing: str) -> Iterator[None]:
    """Turn a raw OSError inside the block into `format.file.write` (ours pass through)."""
    try:
        yield
    except WeightfileError:
        raise
    except OSError as exc:
        raise write_error(exc, path, doing) from None


def check_output(
    path: str | os.PathLike[str],
    overwrite: bool,
    exists_rule: str = "format.file.exists",
    hint: str = " (pass overwrite=True to replace it)",
) -> Path:
    """Refuse a destination this writer may not publish at (spec/ninfer3.md §safe-files).

    Missing: fine, if its folder is a folder. A regular file: `DestinationExistsError`
    (`exists_rule`) unless `overwrite`. Anything else (a symlink, dangling or not, a directory, a
    FIFO, a device node, a socket): `format.file.destination` whatever `overwrite` says, since a
    rename would replace it and an open would follow or block on it.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise write_error(exc, path, "inspect the destination") from None
    if info is None:
        try:
            folder = os.stat(path.parent)
        except OSError as exc:
            raise write_error(exc, path.parent, "find the destination's folder") from None
        if not stat.S_ISDIR(folder.st_mode):
            raise FileAccessError(
                "format.file.destination", "the destination's folder is not a folder",
                path=str(path.parent), errno=errno.ENOTDIR,
            )  # fmt: skip
        return path
    if not stat.S_ISREG(info.st_mode):
        raise FileAccessError(
            "format.file.destination",
            f"the destination is {_kind(info.st_mode)}: never followed, replaced or written into",
            path=str(path),
        )
    if not overwrite:
        raise DestinationExistsError(exists_rule, f"{path} exists{hint}")
    return path


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    return "not a regular file"


@contextlib.contextmanager
def staged_path(
    path: str | os.PathLike[str],
    overwrite: bool,
    mode: int = PUBLIC_MODE,
    exists_rule: str = "format.file.exists",
) -> Iterator[Path]:
    """A locked temporary file beside `path` (its name: `TEMP_NAME`), published at `path` when the
    block succeeds, removed when it fails (the sweep removes it after a kill). The block writes
    the yielded path (it may reopen it: the lock stays on this writer's descriptor). The
    destination is checked (`check_output`) before and again just before publication."""
    path = Path(path)
    check_output(path, overwrite, exists_rule)
    sweep(path.parent)  # a killed writer's leftovers go now, whoever wrote them
    tmp, fd = create_temp(path, mode)
    try:
        yield tmp
        with os_failures(path, "publish"):
            os.fsync(fd)
            check_output(path, overwrite, exists_rule)
            publish(tmp, path, overwrite, exists_rule)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def staged(
    path: str | os.PathLike[str],
    overwrite: bool,
    mode: int = PUBLIC_MODE,
    exists_rule: str = "format.file.exists",
) -> Iterator[BinaryIO]:
    """`staged_path`, with the temporary file open for writing (spec/ninfer3.md §safe-files).
    `mode` is passed to open(2), so the umask applies (0644 & ~umask by default)."""
    path = Path(path)
    with (
        staged_path(path, overwrite, mode, exists_rule) as tmp,
        os_failures(path, "write"),
        open(tmp, "r+b") as out,
    ):
        yield out
        out.flush()


def write_output(
    path: str | os.PathLike[str], data: bytes, overwrite: bool, mode: int = PUBLIC_MODE
) -> Path:
    """`data` published at `path` by the output policy (`staged`)."""
    with staged(path, overwrite, mode) as out:
        out.write(data)
    return Path(path)


def publish(
    tmp: Path, path: Path, overwrite: bool, exists_rule: str = "format.file.exists"
) -> None:
    """Rename into place; without overwrite, a hard link fails atomically if `path` exists."""
    exists = DestinationExistsError(
        exists_rule, f"{path} exists (pass overwrite=True to replace it)"
    )
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise exists from None
    except OSError as exc:  # a filesystem without hard links: check-then-rename is the best left
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.lexists(path):
            raise exists from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def temp_path(destination: Path) -> Path:
    return destination.parent / f".{destination.name}.{secrets.token_hex(8)}.tmp"


def create_temp(destination: Path, mode: int = PUBLIC_MODE) -> tuple[Path, int]:
    """A new, empty, locked temporary file beside `destination`: (path, fd open read-write)."""
    for _ in range(8):
        temp = temp_path(destination)
        # named by the destination the user gave: the temporary name alone says nothing to them
        with os_failures(destination, f"create a temporary file ({temp.name}) beside it"):
            fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, mode)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                # a filesystem without flock: write unlocked (a sweep there cannot lock the
                # file either, so it leaves it alone)
                if exc.errno not in _NO_FLOCK:
                    raise
            # a sweep may have removed it between the create and the lock: then start again
            if os.stat(temp).st_ino == os.fstat(fd).st_ino:
                return temp, fd
        except FileNotFoundError:
            pass
        except OSError as exc:
            os.close(fd)
            raise write_error(exc, temp, "lock a temporary file") from None
        os.close(fd)
    raise FileAccessError(
        "format.file.write", "temporary files keep disappearing", path=str(destination.parent)
    )


@contextlib.contextmanager
def staged_folder(destination: Path) -> Iterator[Path]:
    """A private (mode 0700), locked temporary folder beside `destination` for intermediate files
    (a plaintext before it is encrypted); removed at the end, or by the next sweep if killed."""
    for _ in range(8):
        folder = temp_path(destination)
        with os_failures(folder, "create a temporary folder"):
            os.mkdir(folder, 0o700)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in _NO_FLOCK:  # see create_temp
                os.close(fd)
                raise write_error(exc, folder, "lock a temporary folder") from None
        if os.path.isdir(folder) and os.stat(folder).st_ino == os.fstat(fd).st_ino:
            break
        os.close(fd)
    else:
        raise FileAccessError(
            "format.file.write", "temporary folders keep disappearing", path=str(destination)
        )
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


@contextlib.contextmanager
def unnamed_file(destination: Path) -> Iterator[tuple[BinaryIO, Path] | None]:
    """An open, mode 0600 file in `destination`'s folder that no name points to (O_TMPFILE, else
    created and unlinked at once), with a path that reopens it while this process lives
    (/proc/self/fd/N): its bytes go when the process ends, `kill -9` included, with no sweep
    needed (a plaintext before encryption, spec/vqf.md §protected). None where /proc is absent.
    """
    if not os.path.isdir("/proc/self/fd"):
        yield None
        return
    folder = destination.parent
    fd = -1
    if hasattr(os, "O_TMPFILE"):
        try:
            fd = os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, SECRET_MODE)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise write_error(exc, folder, "create an unnamed temporary file") from None
    if fd < 0:  # no O_TMPFILE on this file system: a name for an instant, while still empty
        temp, fd = create_temp(destination, SECRET_MODE)
        with os_failures(temp, "unlink a temporary file"):
            os.unlink(temp)
    with os_failures(destination, "write"), os.fdopen(fd, "w+b") as out:
        os.fchmod(fd, SECRET_MODE)
        yield out, Path(f"/proc/self/fd/{fd}")


def _head(path: Path) -> bytes:
    try:
        return read_head(path, HEADER_BYTES)
    except OSError:
        return b""


def remove_orphans(folder: Path, entry: str, artifact_id: bytes) -> list[Path]:
    """After a `.ninfer` writer died publishing `entry` (continuations linked, the entry not):
    remove each `<entry>.part-*` whose header names `artifact_id`, unless an entry with that
    artifact_id was published after all (spec/ninfer3.md §safe-files)."""
    published = _head(folder / entry)
    if published[:8] == ENTRY_MAGIC and published[16:32] == artifact_id:
        return []  # the publication completed; only its temporary file was left
    removed = []
    for volume in sorted(folder.glob(glob.escape(entry) + ".part-*")):
        head = _head(volume)
        if head[:8] == CONTINUATION_MAGIC and head[16:32] == artifact_id:
            with contextlib.suppress(OSError):
                volume.unlink()
                removed.append(volume)
    return removed


def sweep(folder: Path, head_bytes: int = 32) -> list[tuple[str, bytes]]:
    """Remove every writer temporary file in `folder` whose writer is gone (its lock is free).
    Returns (destination name, first `head_bytes` bytes) of each removed file, so a writer can
    recover what a dead writer left half published."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []  # the write itself will report the folder
    for name in names:
        match = TEMP_NAME.fullmatch(name)
        if match is None:
            continue
        path = folder / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue  # a live writer's file
                raise
            if os.stat(path, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
                continue  # replaced meanwhile: not the file we locked
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                shutil.rmtree(path)
                removed.append((match["name"], b""))
                continue
            head = os.pread(fd, max(head_bytes, HEADER_BYTES), 0)
            os.unlink(path)
            removed.append((match["name"], head[:head_bytes]))
            if head[:8] == ENTRY_MAGIC:
                remove_orphans(folder, match["name"], head[16:32])
        except OSError:
            continue  # not ours to remove (permissions): leave it
        finally:
            os.close(fd)
    return removed
