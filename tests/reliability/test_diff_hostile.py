"""`weightfile diff` on hostile inputs (issue 35 item 5; spec/numerics.md §dump-diff): a header
claiming more than its member holds is refused before anything is allocated, non-array members
and object arrays get typed errors (nothing is unpickled), 0-d arrays are compared, and FIFOs
and devices are refused without being read. Every refusal is one line, exit 4."""

from __future__ import annotations

import io
import os
import stat
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format

from weightfile.cli import main
from weightfile.dumps.read import open_dump
from weightfile.spec.errors import MalformedError, UnsupportedError


def run(*argv: str | Path) -> int:
    return main(["diff", *map(str, argv)])


def npy_bytes(shape: tuple, dtype: str, payload: bytes) -> bytes:
    """An .npy whose header says `shape`/`dtype` whatever `payload` holds."""
    out = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    npy_format.write_array_header_1_0(out, header)
    return out.getvalue() + payload


def npz(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.npz"
    np.savez(path, x=np.float32([1.0, 2.0]))
    return path


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_header_claiming_800m_floats_is_refused_before_allocating(method, tmp_path, good, capsys):
    """A 16-byte member whose header says 800,000,000 float32 (3.2 GB): frontend.dump.size,
    exit 4, and the traced peak stays far below the claim (main allocated 3.2 GB first)."""
    bomb = npz(tmp_path / "bomb.npz", {"x.npy": npy_bytes((800_000_000,), "<f4", bytes(16))},
               method)  # fmt: skip
    tracemalloc.start()
    try:
        code = run(bomb, good)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 4 and peak < 32 * 2**20, peak
    err = capsys.readouterr().err
    assert "[frontend.dump.size]" in err and "bomb.npz:x.npy" in err and len(err.splitlines()) == 1


def test_a_deflated_member_claiming_more_than_deflate_can_expand_is_refused(tmp_path) -> None:
    """The directory and local header say 3.2 GB for a 40-byte deflated stream: beyond the
    1032:1 deflate bound, so the claim is refused from the sizes alone."""
    path = npz(tmp_path / "z.npz", {"x.npy": npy_bytes((800_000_000,), "<f4", bytes(16))},
               zipfile.ZIP_DEFLATED)  # fmt: skip
    data = bytearray(path.read_bytes())
    claim = (3_200_000_128).to_bytes(4, "little")
    data[22:26] = claim  # the local header's uncompressed size
    central = data.index(b"PK\x01\x02")
    data[central + 24 : central + 28] = claim  # the central directory's
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedError) as info:
        open_dump(path)
    assert info.value.rule == "frontend.dump.size" and "(3200000000 bytes)" in info.value.detail
    assert info.value.path.endswith("z.npz:x.npy")


def test_a_header_beyond_a_plain_npy_file_is_refused(tmp_path) -> None:
    path = tmp_path / "a.npy"
    path.write_bytes(npy_bytes((10**12,), "<f8", bytes(8)))
    with pytest.raises(MalformedError) as info:
        open_dump(path)
    assert info.value.rule == "frontend.dump.size"


def test_a_member_that_is_no_array_is_a_typed_error(tmp_path, good, capsys) -> None:
    """main: a raw AttributeError; now frontend.dump.member naming the member."""
    members = {"x.npy": npy_bytes((1,), "<f4", bytes(4)), "notes.txt": b"hello"}
    path = npz(tmp_path / "m.npz", members)
    assert run(path, good) == 4
    err = capsys.readouterr().err
    assert "[frontend.dump.member]" in err and "m.npz:notes.txt" in err


@pytest.mark.parametrize(
    ("members", "rule"),
    [
        ({"x.npy": b"\x93NUMPY\x01\x00garbage"}, "frontend.dump.malformed"),
        ({"x.npy": npy_bytes((2,), "<f4", bytes(12))}, "frontend.dump.size"),  # extra bytes
        ({"x.npy": npy_bytes((2,), "|V4", bytes(8))}, "frontend.dump.dtype"),
        ({"x.npy": npy_bytes((2,), "<U3", bytes(24))}, "frontend.dump.dtype"),
    ],
)
def test_malformed_members_are_typed(members, rule, tmp_path) -> None:
    with pytest.raises((MalformedError, UnsupportedError)) as info:
        open_dump(npz(tmp_path / "m.npz", members))
    assert info.value.rule == rule


def test_a_duplicate_member_is_refused(tmp_path) -> None:
    path = tmp_path / "d.npz"
    with zipfile.ZipFile(path, "w") as z, pytest.warns(UserWarning, match="Duplicate"):
        z.writestr("x.npy", npy_bytes((1,), "<f4", bytes(4)))
        z.writestr("x.npy", npy_bytes((1,), "<f4", b"\0\0\x80?"))
    with pytest.raises(MalformedError) as info:
        open_dump(path)
    assert info.value.rule == "frontend.dump.member"


def test_a_corrupted_member_is_malformed_at_read(tmp_path, good, capsys) -> None:
    """A flipped value byte breaks the member's CRC: frontend.dump.malformed, exit 4."""
    data = bytearray(good.read_bytes())
    at = data.index(np.float32(2.0).tobytes())
    data[at] ^= 1
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    assert run(bad, good) == 4
    assert "[frontend.dump.malformed]" in capsys.readouterr().err


class Marker:
    """Unpickling this writes the marker file: proof that nothing was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_an_object_array_is_refused_and_never_unpickled(tmp_path, good, capsys) -> None:
    marker = tmp_path / "unpickled"
    evil = tmp_path / "evil.npz"
    np.savez(evil, x=np.array([Marker(str(marker))], dtype=object))
    assert run(evil, good) == 4
    err = capsys.readouterr().err
    assert "[frontend.dump.dtype]" in err and "never loaded" in err and not marker.exists()
    # the payload is live: numpy with pickles allowed does write the marker
    with np.load(evil, allow_pickle=True) as z:
        z["x"]
    assert marker.exists()


def test_0d_arrays_are_compared(tmp_path, capsys) -> None:
    np.savez(tmp_path / "a.npz", s=np.float32(1.0), input_ids=np.int64([1]))
    np.savez(tmp_path / "b.npz", s=np.float32(1.0), input_ids=np.int64([1]))
    np.savez(tmp_path / "c.npz", s=np.float32(-1.0), input_ids=np.int64([1]))
    assert run(tmp_path / "a.npz", tmp_path / "b.npz") == 0
    assert run(tmp_path / "a.npz", tmp_path / "c.npz") == 1
    assert "s: 1 of 1 differ" in capsys.readouterr().out


def test_a_0d_array_under_a_trace_name_is_named_not_mapped(tmp_path, capsys) -> None:
    """main: a raw IndexError reading the trace's last token of a 0-d array."""
    engine = Path(__file__).resolve().parents[1] / "data" / "kestrel-board" / "a-q4_0-tiled-p5"
    np.savez(tmp_path / "t.npz", input_ids=np.int64([1]), **{"layers.0.q_proj": np.float32(1)})
    assert run(tmp_path / "t.npz", engine / "engine.npz") == 1
    assert "not [tokens, width]" in capsys.readouterr().out


def test_a_fifo_is_refused_without_reading_it(tmp_path, good, capsys) -> None:
    """The FIFO holds bytes (an O_RDWR end keeps it from blocking main's open): main read them
    as a dump; now it is refused from its mode, exit 4, and its bytes are left unread."""
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b"PK\x05\x06" + bytes(18))  # an empty zip archive
        assert run(fifo, good) == 4
        assert "[format.file.not_regular] a FIFO" in capsys.readouterr().err
        assert os.read(fd, 64) == b"PK\x05\x06" + bytes(18)
    finally:
        os.close(fd)


def test_devices_are_refused(tmp_path, good, capsys) -> None:
    """/dev/null (main: "the file is empty", exit 1), and a device node made here as root."""
    assert run("/dev/null", good) == 4
    assert "[format.file.not_regular] a character device" in capsys.readouterr().err
    if os.geteuid() == 0:
        node = tmp_path / "zero"
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
        assert run(good, node) == 4
        assert "character device" in capsys.readouterr().err
