"""`--out -` writes to standard output (issue 35's "instead of /dev/null tricks"): `dump` of one
tensor and `trace`; the summary moves to stderr so stdout holds only the bytes; nothing named
`-` appears; `dump --all --out -` is a usage error."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from weightfile.examples import EXAMPLE_PATH

CLI = [sys.executable, "-m", "weightfile"]


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, env=env)


def test_dump_to_stdout_is_the_same_npy_as_to_a_file(tmp_path: Path) -> None:
    done = cli(["dump", str(EXAMPLE_PATH), "q4_q", "--out", "-"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"-> -" in done.stderr and not (tmp_path / "-").exists()
    piped = np.load(io.BytesIO(done.stdout))
    assert cli(["dump", str(EXAMPLE_PATH), "q4_q", "--out", "f.npy"], tmp_path).returncode == 0
    written = np.load(tmp_path / "f.npy")
    assert piped.dtype == written.dtype and piped.tobytes() == written.tobytes()


@pytest.mark.parametrize("flag", ["--words", "--raw"])
def test_words_and_raw_go_to_stdout_too(tmp_path: Path, flag: str) -> None:
    piped = cli(["dump", str(EXAMPLE_PATH), "q4_q", flag, "--out", "-"], tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert cli(["dump", str(EXAMPLE_PATH), "q4_q", flag, "--out", "f"], tmp_path).returncode == 0
    assert piped.stdout == (tmp_path / "f").read_bytes()


def test_trace_to_stdout_is_an_npz(tmp_path: Path) -> None:
    done = cli(["trace", str(EXAMPLE_PATH), "--token-ids", "1,2", "--out", "-"], tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(io.BytesIO(done.stdout)) as npz:
        assert list(npz["input_ids"]) == [1, 2] and npz["logits"].shape[0] == 2


def test_dump_all_to_stdout_is_refused_before_any_work(tmp_path: Path) -> None:
    done = cli(["dump", str(EXAMPLE_PATH), "--all", "--out", "-"], tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    assert b"--all writes a safetensors file" in done.stderr
