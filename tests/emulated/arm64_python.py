"""The whole Python package on aarch64, under qemu-user, for tests that need more than a C driver.

An arm64 Debian root is built with Debian's own tools and no chroot — `mmdebstrap
--variant=extract` only downloads and unpacks the packages (python3 and libstdc++ for NumPy's
wheels) — and the project's dependencies are installed into a folder beside it from PyPI's
aarch64 wheels (`pip install --target --platform manylinux…aarch64 --only-binary=:all:`). Python
then runs as `qemu-aarch64 -L ROOT ROOT/usr/bin/python3`, with the package's sources mapped in
by symlinks (so the tree under test is what runs) and `CC` set to the host's aarch64 cross
compiler: the library is built on first use exactly as on a board, with the NEON and dotprod
paths, and qemu forwards the compiler's execve to the host.

The root and the wheels are cached under `$XDG_CACHE_HOME/weightfile/arm64-python/<key>` (key:
the Debian suite, the packages and the dependency list), built in a temporary folder and renamed
into place, so an interrupted build leaves nothing a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import weightfile

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "libstdc++6")
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64")
TOOLS = ("mmdebstrap", "qemu-aarch64", "aarch64-linux-gnu-gcc")
REPO = Path(weightfile.__file__).resolve().parent.parent
#: The install name of each top-level folder (setup.py `PACKAGE_ROOTS`).
PACKAGE_ROOTS = {"spec": "spec", "ref": "ref", "fast": "fast", "conformance": "conformance"}


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def dependencies() -> list[str]:
    """The project's run-time requirements, from pyproject.toml."""
    with open(REPO / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = hashlib.sha256(json.dumps([SUITE, PACKAGES, PLATFORMS, dependencies()]).encode())
    return Path(base) / "weightfile" / "arm64-python" / key.hexdigest()[:16]


def ensure_environment() -> Path:
    """The cached folder holding `root/` (arm64 Debian) and `site/` (aarch64 wheels)."""
    final = cache_root()
    if (final / "ready").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=final.parent))
    try:
        subprocess.run(
            ["mmdebstrap", "--quiet", "--variant=extract", "--architectures=arm64",
             "--include=" + ",".join(PACKAGES), SUITE, str(work / "root"), MIRROR],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--target", str(work / "site"), "--python-version", "3.11", "--implementation", "cp",
             "--abi", "cp311", "--only-binary=:all:",
             *(f"--platform={p}" for p in PLATFORMS), *dependencies()],
            check=True, capture_output=True,
        )  # fmt: skip
        (work / "ready").write_text("ok\n")
        if final.exists():  # a concurrent build finished first
            shutil.rmtree(work)
        else:
            os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def package_tree(dest: Path) -> Path:
    """`dest/weightfile` as the installed package looks, made of symlinks into this tree."""
    pkg = dest / "weightfile"
    pkg.mkdir(parents=True)
    for entry in (REPO / "weightfile").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name, folder in PACKAGE_ROOTS.items():
        (pkg / name).symlink_to(REPO / folder)
    return dest


def run_python(env_dir: Path, tree: Path, argv: list[str], cache: Path) -> str:
    """Run `python3 ARGV` on aarch64 under qemu; its stdout (a failure raises)."""
    root = env_dir / "root"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cache),
        "PYTHONPATH": f"{tree}:{env_dir / 'site'}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CC": shutil.which("aarch64-linux-gnu-gcc") or "aarch64-linux-gnu-gcc",
        "WEIGHTFILE_CACHE": str(cache),
    }
    done = subprocess.run(
        ["qemu-aarch64", "-L", str(root), str(root / "usr/bin/python3"), *argv],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout
