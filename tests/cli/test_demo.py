"""`weightfile demo` end to end: build, cache, verify, generate — and the same bytes every time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from weightfile.cli import main
from weightfile.demo import DemoSizes, demo_model
from weightfile.frontend.dispatch import load_session
from weightfile.frontend.generate import stream_tokens
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.vqf.validate import validate


def lines_of(out: str) -> dict[str, str]:
    return {ln.split(None, 1)[0]: ln.split(None, 1)[1] for ln in out.splitlines() if ln.strip()}


def test_demo_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WEIGHTFILE_CACHE", str(tmp_path))
    assert main(["demo"]) == 0
    first = lines_of(capsys.readouterr().out)
    assert "built in" in first["model"]
    path, built = demo_model()
    assert not built and str(path) in first["model"]
    assert validate(path, checksum=True) == []
    s = load_session(path, None, need_tokenizer=True)
    prompt = s.tokenizer.encode("The weight file").ids
    want = list(stream_tokens(s.model, prompt, 16, s.stop_ids))
    assert first["prompt"] == f"'The weight file' -> {prompt}"
    assert first["tokens"] == str(want) and len(want) >= 3
    assert first["text"] == "The weight file" + s.tokenizer.decode(want)
    assert main(["demo", "--prompt", "A template", "--max-tokens", "4"]) == 0
    second = lines_of(capsys.readouterr().out)
    assert second["model"].endswith("(cached)") and len(eval(second["tokens"])) <= 4


def test_demo_builds_the_same_bytes_twice(tmp_path):
    small = DemoSizes(vocab=400)
    a, _ = demo_model(small, root=tmp_path / "a")
    b, _ = demo_model(small, root=tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    assert sidecar_path(a).read_bytes() == sidecar_path(b).read_bytes()
    assert a.parent.name == b.parent.name  # the cache key is a content hash, not a path
    assert demo_model(DemoSizes(vocab=401), root=tmp_path / "a")[0].parent != a.parent
    assert [p.name for p in (tmp_path / "a" / "demo").iterdir() if p.name.startswith(".")] == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell environment")
def test_the_console_command_runs(tmp_path):
    """The console entry point end to end. No wall-clock limit: the work is bounded by itself
    (a tiny model, 3 tokens), and a limit would measure the machine's load, not the code."""
    env = {**os.environ, "WEIGHTFILE_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "weightfile", "demo", "--max-tokens", "3"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no violations" in done.stdout and "tokens" in done.stdout
