"""A failed VQF write removes its own temporary file at once (spec/vqf.md §placement: "a failure
leaves nothing behind"; spec/ninfer3.md §safe-files). Each test fails ONE write and then writes
nothing more: the next write's sweep would remove a leftover temp and hide the bug, so the folder
is listed right after the failure, and must hold exactly what it held before.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import weightfile
from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.vqf import write as ref_write
from weightfile.ref.vqf.protect_write import encrypt_vqf, sign_vqf
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import DestinationExistsError, FileAccessError, InvalidError


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))  # hidden names included: the temps are `.<name>.*.tmp`


def short_last(tensors: list[TensorSource]) -> list[TensorSource]:
    """The last tensor declaring one byte more than its data: `vqf.writer.payload` after
    everything else has been written to the temp."""
    t = tensors[-1]
    return [*tensors[:-1], TensorSource(t.name, t.qtype, t.rows, t.cols, t.data, nbytes=t.size + 1)]


@pytest.mark.parametrize("writer", [write_vqf, weightfile.write_vqf], ids=["ref", "api"])
def test_a_payload_shorter_than_declared_leaves_nothing(tmp_path: Path, writer) -> None:
    dst = tmp_path / "m.vqf"
    with pytest.raises(InvalidError) as info:
        writer(dst, arch=TINY_ARCH, tensors=short_last(tiny_tensors(TINY_ARCH)), flags=TINY_FLAGS)
    assert info.value.rule == "vqf.writer.payload"
    assert listing(tmp_path) == [] and not dst.exists()


def test_a_failing_payload_iterator_leaves_nothing(tmp_path: Path) -> None:
    """The caller's own exception, raised half way through a streamed payload, passes through."""

    def chunks() -> Iterator[bytes]:
        yield bytes(64)
        raise RuntimeError("the source went away")

    dst = tmp_path / "m.vqf"
    t = TensorSource("blob", 1, 1, 64, data=chunks())
    with pytest.raises(RuntimeError, match="went away"):
        write_vqf(dst, arch=TINY_ARCH, tensors=[t], order="given")
    assert listing(tmp_path) == [] and not dst.exists()


def test_a_disk_full_at_fsync_is_ours_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ref_write.os, "fsync", full)
    dst = tmp_path / "m.vqf"
    with pytest.raises(FileAccessError) as info:
        write_vqf(dst, arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH), flags=TINY_FLAGS)
    monkeypatch.undo()
    assert (info.value.rule, info.value.errno) == ("format.file.write", errno.ENOSPC)
    assert listing(tmp_path) == [] and not dst.exists()


def test_a_destination_made_during_the_write_is_kept_and_the_temp_goes(tmp_path: Path) -> None:
    """Someone else creates the destination while we write: publication refuses
    (`vqf.writer.destination`), their file stays as it was, ours leaves no trace."""
    dst = tmp_path / "m.vqf"

    def chunks() -> Iterator[bytes]:
        yield bytes(32)
        dst.write_bytes(b"theirs")
        yield bytes(32)

    t = TensorSource("blob", 1, 1, 16, data=chunks())
    with pytest.raises(DestinationExistsError) as info:
        write_vqf(dst, arch=TINY_ARCH, tensors=[t], order="given")
    assert info.value.rule == "vqf.writer.destination"
    assert listing(tmp_path) == ["m.vqf"] and dst.read_bytes() == b"theirs"


def test_failed_protect_writes_leave_nothing_new(tmp_path: Path) -> None:
    """sign_vqf refuses a legacy source and encrypt_vqf an already protected one, both inside
    their staged write: only the sources remain."""
    tensors = tiny_tensors(TINY_ARCH)
    legacy = write_vqf(tmp_path / "legacy.vqf", arch=TINY_ARCH, tensors=tensors, layout="legacy")
    plain = write_vqf(tmp_path / "plain.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    enc = encrypt_vqf(plain, tmp_path / "enc.vqf", b"pass")
    before = listing(tmp_path)
    with pytest.raises(InvalidError) as info:
        sign_vqf(legacy, tmp_path / "signed.vqf", (7).to_bytes(32, "big"))
    assert info.value.rule == "vqf.writer.legacy"
    assert listing(tmp_path) == before
    with pytest.raises(InvalidError):
        encrypt_vqf(enc, tmp_path / "twice.vqf", b"pass")
    assert listing(tmp_path) == before == ["enc.vqf", "legacy.vqf", "plain.vqf"]
