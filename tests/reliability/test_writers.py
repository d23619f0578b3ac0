"""Writers are atomic under kill -9, and their OS failures are ours (spec/ninfer3.md §safe-files).

The reproducers of issue 14: a killed VQF writer left its `*.tmp` in the destination folder (12 of
12 trials), a killed sharded `.ninfer` writer left four, and one killed while publishing left
`out.ninfer.part-0001` without its entry, so the same write then failed `ninfer3.writer.exists`
until someone deleted it by hand. Real writer processes are killed here (a few trials, seeded),
and the next write to the folder must leave nothing behind and succeed.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import weightfile
from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref import staging
from weightfile.ref.ninfer3.describe import verify
from weightfile.ref.ninfer3.plan import ResourceSpec
from weightfile.ref.ninfer3.write import ArtifactWriter, write_artifact
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import FileAccessError

ROOT = Path(__file__).resolve().parents[2]
TEXT = {"text": {"config": {}}}
BIG = 27_610  # the spec/ninfer3.md §framing-numbers sharded example: four files under limit 12,288
#: The child's least write time in ms: one 1 ms sleep per 512-byte chunk.
WRITE_MS = {"vqf": (64 << 10) // 512, "ninfer": -(-BIG // 512)}

#: A child that writes slowly (one chunk per millisecond), so a kill lands mid-write.
CHILD = """
import sys, time
from pathlib import Path
kind, out = sys.argv[1], Path(sys.argv[2])

def slow(n, step=512):
    for i in range(0, n, step):
        time.sleep(0.001)
        yield bytes((j * 13 + 5) & 255 for j in range(i, min(n, i + step)))

from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.examples import TINY_ARCH
from weightfile.ref.ninfer3.plan import ResourceSpec
from weightfile.ref.ninfer3.write import write_artifact
print("ready", flush=True)  # imports done: the parent's clock starts now
if kind == "vqf":
    write_vqf(out, arch=TINY_ARCH, order="given",
              tensors=[TensorSource("blob", 1, 1, 64 << 10 >> 2, data=slow(64 << 10))])
else:
    write_artifact(out, {"r.big": slow(BIG)}, objects=[ResourceSpec("r.big", BIG)],
                   components={"text": {"config": {}}}, limit=12_288)
time.sleep(60)  # a fast machine finishes first: the kill then finds a writer that has published
""".replace("BIG", str(BIG))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _kill_at(kind: str, out: Path, delay: float) -> int:
    """Start a writer, kill -9 it `delay` seconds after its imports; its return code."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    return child.wait(timeout=30)


def _write_ninfer(out: Path) -> list[Path]:
    data = bytes((j * 13 + 5) % 256 for j in range(BIG))
    return write_artifact(
        out, {"r.big": data}, objects=[ResourceSpec("r.big", BIG)], components=TEXT, limit=12_288
    )


@pytest.mark.parametrize("kind", ["vqf", "ninfer"])
def test_killed_writers_leave_nothing_after_the_next_write(tmp_path: Path, kind: str) -> None:
    rng = random.Random(14)
    out = tmp_path / f"out.{kind}"
    killed_mid_write = 0
    for trial in range(3):
        # 128 or 54 chunks of >= 1 ms each: a delay within that many ms lands during the write
        # (or, on a fast machine, just after it: the child then waits to be killed)
        assert _kill_at(kind, out, rng.uniform(0.0, WRITE_MS[kind] / 1000)) == -signal.SIGKILL
        killed_mid_write += bool(_leftovers(tmp_path))
        for path in [out, *tmp_path.glob(out.name + ".part-*")]:
            if kind == "vqf" and path.exists():  # published: then whole and valid
                assert weightfile.validate(path, checksum=True) == [], trial
        if out.exists() and kind == "ninfer":
            assert verify(out) == [], trial
        # the next write to the folder (another name) sweeps the dead writer's files
        write_vqf(tmp_path / f"next{trial}.vqf", arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH),
                  flags=TINY_FLAGS)  # fmt: skip
        assert _leftovers(tmp_path) == [], trial
        for path in [out, *tmp_path.glob(out.name + ".part-*")]:
            path.unlink(missing_ok=True)
    assert killed_mid_write  # the trials did catch writers with temporary files open


def test_a_sharded_write_killed_while_publishing_recovers_by_itself(tmp_path: Path) -> None:
    """Killed right after the first continuation is linked: the volume is there, its entry is
    not. The same write run again succeeds, with no hand-made deletion."""
    out = tmp_path / "out.ninfer"
    script = textwrap.dedent(
        f"""
        import os, signal
        real_link = os.link
        def link_then_die(src, dst):
            real_link(src, dst)
            os.kill(os.getpid(), signal.SIGKILL)
        os.link = link_then_die
        from weightfile.ref.ninfer3.plan import ResourceSpec
        from weightfile.ref.ninfer3.write import write_artifact
        write_artifact({str(out)!r}, {{"r.big": bytes({BIG})}}, objects=[ResourceSpec("r.big",
                       {BIG})], components={{"text": {{"config": {{}}}}}}, limit=12_288)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert not out.exists() and (tmp_path / "out.ninfer.part-0001").exists()  # the reproducer
    paths = _write_ninfer(out)
    assert [p.name for p in paths] == ["out.ninfer"] + [
        f"out.ninfer.part-000{i}" for i in (1, 2, 3)
    ]
    assert verify(out) == [] and _leftovers(tmp_path) == []
    with weightfile.open(out) as f:
        assert bytes(f.decode("r.big")) == bytes((j * 13 + 5) % 256 for j in range(BIG))


def test_a_live_writers_files_are_never_swept(tmp_path: Path) -> None:
    writer = ArtifactWriter(
        tmp_path / "live.ninfer", objects=[ResourceSpec("r.big", BIG)], components=TEXT,
        limit=12_288,
    )  # fmt: skip
    temps = _leftovers(tmp_path)
    assert len(temps) == 4
    assert staging.sweep(tmp_path) == [] and _leftovers(tmp_path) == temps
    writer.write("r.big", bytes(BIG))
    writer.finish()
    assert _leftovers(tmp_path) == [] and verify(tmp_path / "live.ninfer") == []


def test_an_unpublished_entry_temp_does_not_remove_a_published_set(tmp_path: Path) -> None:
    """A temp whose writer died after the entry was linked: the sweep removes the temp only."""
    paths = _write_ninfer(tmp_path / "done.ninfer")
    stale = tmp_path / ".done.ninfer.0123456789abcdef.tmp"
    stale.write_bytes(paths[0].read_bytes()[:4096])  # same artifact_id as the published entry
    staging.sweep(tmp_path)
    assert not stale.exists() and all(p.exists() for p in paths) and verify(paths[0]) == []


# -- OS failures are ours -------------------------------------------------------------------


def test_a_file_size_limit_is_format_file_write_and_leaves_nothing(tmp_path: Path) -> None:
    """Disk full, simulated with RLIMIT_FSIZE in a child (writes then fail with EFBIG)."""
    script = textwrap.dedent(
        f"""
        import resource
        from weightfile.ref.vqf.write import TensorSource, write_vqf
        from weightfile.ref.ninfer3.plan import ResourceSpec
        from weightfile.ref.ninfer3.write import write_artifact
        from weightfile.examples import TINY_ARCH
        from weightfile.spec.errors import FileAccessError
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, resource.RLIM_INFINITY))
        try:
            write_vqf({str(tmp_path / "big.vqf")!r}, arch=TINY_ARCH, order="given",
                      tensors=[TensorSource("blob", 1, 1, 1 << 16, data=bytes(1 << 18))])
        except FileAccessError as exc:
            print(exc.rule, exc.errno)
        try:
            write_artifact({str(tmp_path / "big.ninfer")!r}, {{"r": bytes(1 << 18)}},
                           objects=[ResourceSpec("r", 1 << 18)],
                           components={{"text": {{"config": {{}}}}}})
        except FileAccessError as exc:
            print(exc.rule, exc.errno)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["format.file.write", str(errno.EFBIG)] * 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC])
def test_read_only_denied_or_full_folders_are_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """The tests run as root, which no chmod stops: the OS answer is injected where the writers
    create their temporary files."""

    def refuse(*args: object, **kwargs: object) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(staging.os, "open", refuse)
    with pytest.raises(FileAccessError) as info:
        write_vqf(tmp_path / "m.vqf", arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH))
    assert info.value.rule == "format.file.write" and info.value.errno == code
    with pytest.raises(FileAccessError) as info:
        _write_ninfer(tmp_path / "m.ninfer")
    assert info.value.rule == "format.file.write" and isinstance(info.value, OSError)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_the_public_write_vqf_goes_through_the_fast_writer(monkeypatch, tmp_path: Path) -> None:
    """weightfile.write_vqf checks the arch, then writes with fast.vqf.write (the C FNV)."""
    from weightfile.fast.vqf import write as fast_write

    calls = []
    monkeypatch.setattr(fast_write, "write_vqf", lambda path, **kw: calls.append(path) or path)
    weightfile.write_vqf(tmp_path / "m.vqf", arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH))
    assert calls == [tmp_path / "m.vqf"]


def test_the_api_writer_hashes_with_the_c_kernel_where_it_builds() -> None:
    from weightfile.fast._native import library
    from weightfile.fast.backend import FAST
    from weightfile.fast.vqf import write as fast_write
    from weightfile.fast.vqf.fnv1a64 import fnv1a64 as fast_fnv

    backend = fast_write.write_vqf.keywords["backend"]
    assert backend is FAST and backend.checksum is fast_fnv
    if library() is not None:  # the C kernel answers, and as the reference does
        from weightfile.ref.vqf.fnv1a64 import fnv1a64 as ref_fnv

        data = bytes(range(256)) * 3
        assert fast_fnv(data) == ref_fnv(data)
    # the convert writers publish through it too
    from weightfile.families.qwen3 import to_vqf as qwen3_vqf

    assert qwen3_vqf.write_vqf is fast_write.write_vqf
    assert isinstance(TensorSource, type)


def test_a_killed_runs_private_folder_is_swept_and_a_live_one_is_not(tmp_path: Path) -> None:
    """The plaintext folder `protect_vqf` and the VQF importer stage in (ref/staging.py)."""
    dead = tmp_path / ".out.vqf.0123456789abcdef.tmp"
    dead.mkdir()
    (dead / "plain.vqf").write_bytes(b"secret")
    with staging.staged_folder(tmp_path / "live.vqf") as live:
        (live / "plain.vqf").write_bytes(b"secret")
        write_vqf(tmp_path / "m.vqf", arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH))
        assert not dead.exists() and live.is_dir() and (live.stat().st_mode & 0o777) == 0o700
    assert _leftovers(tmp_path) == []


#: `convert --encrypt` paused at one stage (named by argv[1]) so the parent can kill it there.
ENCRYPTING_CHILD = """
import sys, time
from weightfile.cli import main
import weightfile.ref.vqf.write as vqf_write
from weightfile.ref import staging
stage = sys.argv[1]

def pause(name):
    if name == stage:
        print("at", name, flush=True)
        time.sleep(60)

def patched(module, name, before, after):
    original = getattr(module, name)
    def call(*args, **kwargs):
        pause(before)
        result = original(*args, **kwargs)
        pause(after)
        return result
    setattr(module, name, call)

patched(vqf_write, "write_data", "plaintext begun", "plaintext written")
patched(staging, "publish", "publishing", "published")
main(["convert", *sys.argv[2:], "-q", "--requantize", "--encrypt"])
pause("done")
"""

ENCRYPT_STAGES = ("plaintext begun", "plaintext written", "publishing", "published", "done")


def _plaintexts(folder: Path) -> list[str]:
    """Every file under `folder` that is a plaintext VQF (the magic, and no ENC flag)."""
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.vqf.flags import VQFFlag

    found = []
    for path in folder.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        if path.read_bytes()[:4] == EXAMPLE_MAGIC:
            with open_vqf(path, check_ranges=False) as vqf:
                if not vqf.header.flags & VQFFlag.ENC:
                    found.append(path.name)
    return found


EXAMPLE_MAGIC = weightfile.examples.EXAMPLE_PATH.read_bytes()[:4]


@pytest.mark.parametrize("stage", ENCRYPT_STAGES)
def test_a_killed_convert_encrypt_leaves_no_plaintext_anywhere(tmp_path: Path, stage: str) -> None:
    """Issue 35 item 2: the plaintext of `convert --encrypt` lives in a file no name points to
    (ref/staging.py `unnamed_file`), so kill -9 at any stage leaves none under the destination's
    folder, with no later write to sweep it. While the child lives, its plaintext is there: an
    open, deleted file in that folder (what /proc shows), so the test does look at one."""
    from weightfile.cli import main

    sources = tmp_path / "sources"
    out_dir = tmp_path / "out"
    sources.mkdir()
    out_dir.mkdir()
    (sources / "pw").write_bytes(b"a passphrase\n")
    assert main(["convert", str(weightfile.examples.EXAMPLE_PATH), str(sources / "m.gguf")]) == 0
    argv = [
        str(sources / "m.gguf"),
        str(out_dir / "m.vqf"),
        "--passphrase-file",
        str(sources / "pw"),
    ]
    child = subprocess.Popen(
        [sys.executable, "-c", ENCRYPTING_CHILD, stage, *argv],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    line = child.stdout.readline()
    while line and not line.startswith("at "):
        line = child.stdout.readline()
    assert line == f"at {stage}\n"
    held = [os.readlink(fd) for fd in Path(f"/proc/{child.pid}/fd").iterdir()]
    unnamed = [t for t in held if t.startswith(str(out_dir)) and t.endswith("(deleted)")]
    if stage != "done":
        assert unnamed, held  # the plaintext exists, and only as an unnamed file
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert _plaintexts(out_dir) == []
    assert _plaintexts(tmp_path) == []


@pytest.mark.parametrize("tmpfile", [True, False])
def test_an_unnamed_file_has_no_name_while_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmpfile: bool
) -> None:
    """ref/staging.py `unnamed_file`: O_TMPFILE, or (a file system without it) created and
    unlinked at once; either way the folder shows nothing while the bytes are there, readable
    again through the path it gives, mode 0600."""
    if not tmpfile:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    with staging.unnamed_file(tmp_path / "m.vqf") as unnamed:
        assert unnamed is not None
        out, path = unnamed
        out.write(b"plaintext")
        out.flush()
        assert list(tmp_path.iterdir()) == []
        assert path.read_bytes() == b"plaintext"
        assert os.fstat(out.fileno()).st_mode & 0o777 == 0o600
    assert list(tmp_path.iterdir()) == []
