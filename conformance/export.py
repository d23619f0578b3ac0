"""The corpus as a folder or a release tarball that needs no Python to read (conformance/README.md,
"Taking the corpus without Python").

What is exported: every file of `corpus/` (the manifests, VERSION and the case folders),
`README.md` (the whole contract), `CHANGELOG.md` and the C adapter's sources — and `SHA256SUMS`,
one `<hex>  <path>` line per file in byte order of the paths, which `sha256sum -c SHA256SUMS`
checks. The tarball is reproducible: entries sorted, owner 0, mtime 0, fixed modes, and a gzip
header without a time stamp, so the same corpus always gives the same bytes and SHA-256.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

from weightfile.ref.staging import check_output, staged_folder, write_output
from weightfile.spec.errors import DestinationExistsError

from .generate import CORPUS_DIR

HERE = Path(__file__).parent
#: Files beside the corpus that travel with it, as (source, name in the export).
EXTRA_FILES = (
    (HERE / "README.md", "README.md"),
    (HERE / "CHANGELOG.md", "CHANGELOG.md"),
    (HERE / "adapters" / "c" / "conform.c", "adapters/c/conform.c"),
)
SUMS_NAME = "SHA256SUMS"


def export_files(corpus: Path = CORPUS_DIR) -> Iterator[tuple[str, Path]]:
    """(name in the export, source path) for every exported file, names sorted bytewise."""
    found = {str(p.relative_to(corpus.parent)): p for p in corpus.rglob("*") if p.is_file()}
    found |= {name: src for src, name in EXTRA_FILES}
    for name in sorted(found, key=lambda n: n.encode()):
        yield name, found[name]


def sums(files: list[tuple[str, bytes]]) -> bytes:
    """The `SHA256SUMS` text of (name, bytes) pairs, in the order given (sha256sum's format)."""
    return "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in files).encode()


def contents(corpus: Path = CORPUS_DIR) -> list[tuple[str, bytes]]:
    """Every exported (name, bytes), `SHA256SUMS` last."""
    files = [(name, src.read_bytes()) for name, src in export_files(corpus)]
    return [*files, (SUMS_NAME, sums(files))]


def export_corpus(destination: Path, corpus: Path = CORPUS_DIR) -> int:
    """Write the export into the new folder `destination` (which must not exist) and return the
    number of files. The folder is built beside it under a temporary name and renamed into place,
    so a failed or killed export leaves no partial folder (ref/staging.py)."""
    destination = Path(destination)
    if destination.is_dir() and not destination.is_symlink():
        raise DestinationExistsError("format.file.exists", f"{destination} exists")
    check_output(destination, overwrite=False)
    files = contents(corpus)
    with staged_folder(destination) as folder:
        for name, data in files:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
            os.chmod(sub, 0o755)
        check_output(destination, overwrite=False)
        os.rename(folder, destination)
    return len(files)


def version_tag(corpus: Path = CORPUS_DIR) -> str:
    """`<format>-<version>` of the newest corpus of each format and the generator, joined by
    underscores, from VERSION: e.g. `vqf-v4_ninfer3-v2_generator-4`."""
    newest: dict[str, str] = {}
    for line in (corpus / "VERSION").read_text().splitlines():
        key, _, value = line.partition(" ")
        if value:
            newest[key] = value
    return "_".join(f"{k}-{v}" for k, v in newest.items())


def tarball(corpus: Path = CORPUS_DIR) -> tuple[str, bytes]:
    """(file name, bytes) of the reproducible release tarball, its entries under one top folder."""
    top = f"weightfile-conformance-{version_tag(corpus)}"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in contents(corpus):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return f"{top}.tar.gz", gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def write_release(folder: Path, corpus: Path = CORPUS_DIR, overwrite: bool = False) -> Path:
    """Write the tarball and `<tarball>.sha256` (sha256sum's format) into `folder`."""
    name, data = tarball(corpus)
    path = Path(folder) / name
    write_output(path, data, overwrite)
    digest = hashlib.sha256(data).hexdigest()
    write_output(path.with_name(name + ".sha256"), f"{digest}  {name}\n".encode(), overwrite)
    return path
