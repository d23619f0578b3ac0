"""Files are opened safely, for both containers (spec/ninfer3.md §safe-files, spec/vqf.md
§safe-open).

Each test is the minimal reproducer of one failure issue 14 lists: a FIFO that hung `verify`, a
directory, a device, a symlink loop, an over-long name or an unreadable file that raised a raw
OSError, a volume linked into another folder that was followed, a sparse entry whose 3 GiB of
claimed JSON was read whole, and a map that ran out of address space with a raw ENOMEM.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from strategies.ninfer3 import (
    ENTRY_MAGIC,
    SHARDED_PAYLOAD,
    build_file_set,
    raises_rule,
    sharded_doc,
)

import weightfile
from weightfile.cli import main
from weightfile.commands._common import EXIT_IO
from weightfile.examples import EXAMPLE_PATH
from weightfile.ref import fileio
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.read import MAX_JSON_BYTES, open_artifact
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import FileAccessError, UnsupportedError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """A FIFO that blocks an open would hang the test: fail it after 20 s instead."""

    def expired(*_: object) -> None:
        raise TimeoutError("the open blocked")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _sharded(tmp_path: Path) -> list[Path]:
    return build_file_set(tmp_path, "s.ninfer", sharded_doc(), SHARDED_PAYLOAD)


def _as_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


# -- entries: VQF files and .ninfer entries -----------------------------------------------------


@pytest.mark.parametrize("name", ["m.vqf", "m.ninfer", "m.bin"])
def test_a_fifo_entry_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    with pytest.raises(FileAccessError) as info:
        weightfile.open(fifo)
    assert info.value.rule == "format.file.not_regular" and "FIFO" in info.value.detail
    assert isinstance(info.value, OSError) and str(fifo) in str(info.value)
    for opener in (open_vqf, open_artifact):  # the readers themselves, without sniff
        with pytest.raises(FileAccessError, match=r"format\.file\.not_regular"):
            opener(fifo)


def test_verify_of_a_fifo_is_one_line_exit_4(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "m.ninfer"
    os.mkfifo(fifo)
    assert main(["verify", str(fifo)]) == EXIT_IO
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[format.file.not_regular]" in err[0] and str(fifo) in err[0]


@pytest.mark.parametrize("which", ["directory", "device"])
def test_directories_and_devices_are_not_regular_files(tmp_path: Path, which: str) -> None:
    path = tmp_path if which == "directory" else Path("/dev/null")
    for opener in (open_vqf, open_artifact, weightfile.open):
        with pytest.raises(FileAccessError) as info:
            opener(path)
        assert info.value.rule == "format.file.not_regular"
    assert weightfile.validate(path)[0].rule == "format.file.not_regular"


def test_a_symlink_loop_is_ours(tmp_path: Path) -> None:
    a, b = tmp_path / "a.vqf", tmp_path / "b.vqf"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(FileAccessError) as info:
        weightfile.open(a)
    assert info.value.rule == "format.file.unreadable" and info.value.errno == errno.ELOOP
    assert "symlink loop" in info.value.detail


def test_an_over_long_name_is_ours(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError) as info:
        open_vqf(tmp_path / ("x" * 300 + ".vqf"))
    assert info.value.rule == "format.file.unreadable" and info.value.errno == errno.ENAMETOOLONG


def test_a_missing_file_is_ours_and_still_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError) as info:
        open_artifact(tmp_path / "gone.ninfer")
    assert info.value.rule == "format.file.missing" and info.value.errno == errno.ENOENT


def test_an_unreadable_file_is_ours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EACCES: a chmod 000 file cannot be used when the tests run as root, so the open fails the
    way the kernel fails it for everyone else."""
    path = tmp_path / "m.vqf"
    path.write_bytes(EXAMPLE_PATH.read_bytes())
    real_open = os.open

    def denied(p: object, flags: int, *args: object) -> int:
        if Path(str(p)) == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(p))
        return real_open(p, flags, *args)

    monkeypatch.setattr(fileio.os, "open", denied)
    with pytest.raises(FileAccessError) as info:
        open_vqf(path)
    assert info.value.rule == "format.file.unreadable" and "permission denied" in str(info.value)


# -- continuation volumes ----------------------------------------------------------------------


@pytest.mark.parametrize("make", ["fifo", "directory", "loop"])
def test_a_bad_continuation_is_ours_and_verify_lists_it(tmp_path: Path, make: str) -> None:
    paths = _sharded(tmp_path)
    paths[1].unlink()
    if make == "fifo":
        os.mkfifo(paths[1])
    elif make == "directory":
        paths[1].mkdir()
    else:
        paths[1].symlink_to(paths[1].name)  # a link to itself
    rule = "format.file.unreadable" if make == "loop" else "format.file.not_regular"
    with open_artifact(paths[0]) as artifact:
        assert bytes(artifact.read_range(0, 500)) == SHARDED_PAYLOAD[:500]  # the entry still reads
        with pytest.raises(FileAccessError) as info:
            artifact.read_range(499, 2)
    assert info.value.rule == rule and info.value.path == "files[1]"
    assert [(v.rule, v.path) for v in verify(paths[0])] == [(rule, "files[1]")]


def test_a_volume_linked_into_another_folder_is_refused(tmp_path: Path) -> None:
    """The symlink rule of spec/ninfer3.md §safe-files: the resolved volume must lie in the entry's
    folder."""
    (tmp_path / "set").mkdir()
    paths = _sharded(tmp_path / "set")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    paths[1].rename(elsewhere / paths[1].name)
    paths[1].symlink_to(elsewhere / paths[1].name)
    with open_artifact(paths[0]) as artifact, raises_rule(FileAccessError, "ninfer3.part.outside"):
        artifact.read_range(499, 2)
    assert [v.rule for v in verify(paths[0])] == ["ninfer3.part.outside"]


def test_a_volume_linked_inside_the_entry_folder_is_followed(tmp_path: Path) -> None:
    paths = _sharded(tmp_path)
    store = tmp_path / "store.bin"
    paths[1].rename(store)
    paths[1].symlink_to(store.name)
    with open_artifact(paths[0]) as artifact:
        assert bytes(artifact.read_range(0, 1344)) == SHARDED_PAYLOAD
    assert verify(paths[0]) == []


# -- lengths before reads, address space ------------------------------------------------------


def test_a_sparse_entry_claiming_3_gib_of_json_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.ninfer"
    claimed = 3 << 30
    with open(path, "wb") as out:
        out.write(ENTRY_MAGIC + claimed.to_bytes(8, "little") + bytes(16))
        out.truncate(32 + claimed + 4096)  # a hole: nothing of it is on disk
    assert claimed > MAX_JSON_BYTES
    with raises_rule(UnsupportedError, "ninfer3.header.json_limit") as info:
        open_artifact(path)
    assert info.value.offset == 8
    assert [v.rule for v in verify(path)] == ["ninfer3.header.json_limit"]


def test_address_space_exhaustion_is_ours(tmp_path: Path) -> None:
    """A consistent sparse file larger than the address space the process may still map:
    `format.file.address_space`, not a raw ENOMEM (checked in a child with RLIMIT_AS)."""
    big = tmp_path / "big.vqf"
    with open(big, "wb") as out:
        out.write(EXAMPLE_PATH.read_bytes()[:512])
        out.truncate(8 << 30)
    script = textwrap.dedent(
        f"""
        import resource
        from weightfile.ref.vqf.read import open_vqf
        from weightfile.spec.errors import FileAccessError
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), resource.RLIM_INFINITY))
        try:
            open_vqf({str(big)!r})
        except FileAccessError as exc:
            print(exc.rule)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["format.file.address_space"]
