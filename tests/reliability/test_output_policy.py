"""One output policy for every command that writes (spec/ninfer3.md §safe-files; docs/design.md,
"Reliability"; issue 35 item 1).

Every writing command is walked through every kind of destination. A missing destination, and an
existing regular file with --force, are published atomically (a new inode, by rename); an existing
file without --force is `DestinationExistsError` (exit 2); a symlink (to a file or dangling), a
FIFO, a device node (made with mknod in the temporary folder, as root only) or a directory is
`format.file.destination` (exit 4) with or without --force. In every refused case the folder is
exactly as it was (the destination's bytes, inode and type, a symlink's target, no temporary file
left). The reproducer: `dump --all --out /dev/null` as root replaced /dev/null with a regular
file; here the device node is a temporary one, never /dev/null itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.ref.ninfer3.plan import ResourceSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.ref.staging import TEMP_NAME
from weightfile.spec.errors import DestinationExistsError, FileAccessError

EX = str(EXAMPLE_PATH)
OLD = b"old bytes, not ours to replace\n"

#: Each writing command: the destination's suffix, the arguments ({s}: the sources, {d}: OUT).
COMMANDS: dict[str, tuple[str, str]] = {
    "dump --all": (".safetensors", "dump {ex} --all --out {d}"),
    "dump NAME": (".npy", "dump {ex} q4_q --out {d}"),
    "dump --words": (".npz", "dump {ex} q4_q --words --out {d}"),
    "dump --raw": (".bin", "dump {ex} q4_q --raw --out {d}"),
    "trace": (".npz", "trace {ex} --token-ids 1 --out {d}"),
    "run --save-logits": (".npz", "run {ex} --token-ids 1 --max-tokens 1 --save-logits {d}"),
    "convert VQF->GGUF": (".gguf", "convert {ex} {d} -q"),
    "convert GGUF->VQF": (".vqf", "convert {s}/m.gguf {d} -q --requantize"),
    "convert --encrypt": (".vqf", "convert {s}/m.gguf {d} -q --requantize --encrypt {pw}"),
    "encrypt": (".vqf", "encrypt {ex} {d} {pw}"),
    "decrypt": (".vqf", "decrypt {s}/enc.vqf {d} {pw}"),
    "sign": (".vqf", "sign {ex} {d} --sign-key {s}/k.key"),
    "keygen": (".key", "keygen --out {d}"),
}


def argv(command: str, sources: Path, dest: Path) -> list[str]:
    pw = f"--passphrase-file {sources}/pw"
    return COMMANDS[command][1].format(ex=EX, s=sources, d=dest, pw=pw).split()


#: The kinds --force is given with (it changes nothing but for a regular file).
FORCED = ("file --force", "symlink", "fifo", "device", "directory")
KINDS = ("missing", "file", "file --force", "symlink", "dangling", "fifo", "device", "directory")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    (folder / "pw").write_bytes(b"a passphrase\n")
    assert main(["convert", EX, str(folder / "m.gguf")]) == 0
    assert (
        main(["encrypt", EX, str(folder / "enc.vqf"), "--passphrase-file", str(folder / "pw")]) == 0
    )
    assert main(["keygen", "--out", str(folder / "k.key")]) == 0
    return folder


def make(kind: str, dest: Path) -> None:
    """Put a destination of `kind` at `dest` (a neighbour file is a symlink's target)."""
    if kind in ("file", "file --force"):
        dest.write_bytes(OLD)
    elif kind == "symlink":
        (dest.parent / "target").write_bytes(OLD)
        dest.symlink_to("target")
    elif kind == "dangling":
        dest.symlink_to("nowhere")
    elif kind == "fifo":
        os.mkfifo(dest)
    elif kind == "device":
        try:  # the numbers of /dev/null, in our own temporary folder
            os.mknod(dest, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("mknod needs root (CI runs as root)")
    elif kind == "directory":
        dest.mkdir()
        (dest / "inside").write_bytes(OLD)


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry of `folder`, recursively: (mode, inode, bytes or link text)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            body = path.read_bytes()
        elif stat.S_ISLNK(info.st_mode):
            body = os.readlink(path).encode()
        else:
            body = b""
        out[str(path.relative_to(folder))] = (info.st_mode, info.st_ino, body)
    return out


class Hung(BaseException):
    """The command blocked (a FIFO opened for writing waits for a reader forever)."""


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise Hung

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_writer_through_every_destination(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    dest = tmp_path / f"out{COMMANDS[command][0]}"
    walk(capsys, command, argv(command, sources, dest), dest, kind)


def walk(
    capsys: pytest.CaptureFixture[str], command: str, args: list[str], dest: Path, kind: str
) -> None:
    """Run `args` against a destination of `kind` at `dest`; check the policy's answer."""
    tmp_path = dest.parent
    make(kind, dest)
    before = snapshot(tmp_path)
    force = ["--force"] if kind in FORCED else []
    capsys.readouterr()
    with deadline(60):
        code = main([*args, *force])
    err = capsys.readouterr().err
    after = snapshot(tmp_path)
    if kind in ("missing", "file --force"):
        assert code == 0, err
        info = dest.lstat()
        assert stat.S_ISREG(info.st_mode) and dest.read_bytes() != OLD
        if kind == "file --force":
            assert info.st_ino != before[dest.name][1]  # a new file renamed into place
        new = set(after) - set(before) - {dest.name}
        # sidecars of a VQF (OUT.tokenizer.json), never a hidden or temporary name
        assert all(n.startswith(dest.name + ".") and not n.startswith(".") for n in new), new
        assert not [n for n in after if TEMP_NAME.fullmatch(Path(n).name)]
        return
    assert after == before  # the destination untouched, nothing left beside it
    if kind == "file":
        rule = "format.file.exists" if command.split()[0] in ("dump", "trace", "run") else None
        rule = rule or "vqf.writer.destination"  # the VQF writers, GGUF export and keygen
        assert code == 2 and f"DestinationExistsError: [{rule}]" in err and "--force" in err, err
    else:
        assert code == 4 and "[format.file.destination]" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Hugging Face Qwen3 checkpoint, with a tokenizer.json (so a sidecar is written)."""
    torch = pytest.importorskip("torch", reason="a checkpoint needs the 'external' extra")
    transformers = pytest.importorskip("transformers", reason="needs the 'external' extra")
    folder = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, tie_word_embeddings=False,
    )  # fmt: skip
    transformers.Qwen3ForCausalLM(cfg).save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"marker": 1}')
    return folder


@pytest.mark.parametrize("kind", KINDS)
def test_import_through_every_destination(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """`import` (the HF importer, its tokenizer sidecar, and --encrypt's unnamed plaintext)."""
    dest = tmp_path / "out.vqf"
    (checkpoint.parent / "pw").write_bytes(b"a passphrase\n")
    pw = ["--encrypt", "--passphrase-file", str(checkpoint.parent / "pw")]
    walk(capsys, "import", ["import", str(checkpoint), str(dest), "-q", *pw], dest, kind)


@pytest.mark.parametrize("kind", ["file", "symlink", "dangling", "fifo", "directory"])
def test_the_ninfer_writer_refuses_every_existing_destination(tmp_path: Path, kind: str) -> None:
    """The .ninfer writer replaces nothing: an existing file is ninfer3.writer.exists, any other
    kind format.file.destination; the folder stays as it was."""
    dest = tmp_path / "m.ninfer"
    make(kind, dest)
    before = snapshot(tmp_path)
    want = DestinationExistsError if kind == "file" else FileAccessError
    with deadline(60), pytest.raises(want) as info:
        write_artifact(
            dest, {"r.x": b"x" * 64}, objects=[ResourceSpec("r.x", 64)],
            components={"text": {"config": {}}},
        )  # fmt: skip
    assert info.value.rule == (
        "ninfer3.writer.exists" if kind == "file" else "format.file.destination"
    )
    assert snapshot(tmp_path) == before


def test_a_destination_that_turns_into_a_fifo_before_publication_is_refused(
    tmp_path: Path,
) -> None:
    """The destination is checked again just before the rename: a FIFO made while the writer
    works is not replaced, even with overwrite."""
    from weightfile.ref import staging

    dest = tmp_path / "x.bin"
    with pytest.raises(FileAccessError) as info, staging.staged(dest, True) as out:
        out.write(b"new")
        os.mkfifo(dest)
    assert info.value.rule == "format.file.destination"
    assert stat.S_ISFIFO(dest.lstat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["x.bin"]


@pytest.mark.parametrize("kind", ["symlink", "dangling", "fifo", "directory"])
def test_an_import_whose_sidecar_is_not_a_file_is_refused_before_converting(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """OUT.tokenizer.json is checked with OUT, before the conversion: nothing is published."""
    make(kind, tmp_path / "out.vqf.tokenizer.json")
    before = snapshot(tmp_path)
    code = main(["import", str(checkpoint), str(tmp_path / "out.vqf"), "-q"])
    assert code == 4 and "[format.file.destination]" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("kind", KINDS[:1] + KINDS[2:])
def test_check_output_answers_before_any_work(tmp_path: Path, kind: str, overwrite: bool) -> None:
    """The policy's one function, as every writer calls it before its work (a refusal after
    the work would hold the same files, but cost a whole conversion first)."""
    from weightfile.ref.staging import check_output

    dest = tmp_path / "out"
    make("file" if kind == "file --force" else kind, dest)
    before = snapshot(tmp_path)
    if kind == "missing" or (kind == "file --force" and overwrite):
        assert check_output(dest, overwrite) == dest
    elif kind == "file --force":
        with pytest.raises(DestinationExistsError) as info:
            check_output(dest, overwrite)
        assert info.value.rule == "format.file.exists"
    else:
        with pytest.raises(FileAccessError) as info:
            check_output(dest, overwrite)
        assert info.value.rule == "format.file.destination" and isinstance(info.value, OSError)
    assert snapshot(tmp_path) == before
