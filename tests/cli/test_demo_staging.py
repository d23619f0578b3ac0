"""The demo's build folder is a staging folder of ref/staging.py: a build killed with -9 leaves a
folder that the next build sweeps, and a live build's folder is never touched (issue 14,
spec/ninfer3.md §safe-files "Writers")."""

from __future__ import annotations

import signal
import subprocess
import sys

from weightfile.demo import CORPUS_PATH, DemoSizes, cache_key, demo_model
from weightfile.ref.staging import TEMP_NAME, staged_folder

KILLED_BUILD = """
import os, sys
from pathlib import Path
from weightfile.ref.staging import staged_folder
with staged_folder(Path(sys.argv[1])) as work:
    (work / "demo.vqf").write_bytes(b"half a model")
    os.kill(os.getpid(), 9)
"""


def test_a_killed_build_is_swept_and_a_live_one_is_not(tmp_path):
    small = DemoSizes(vocab=400)
    final = tmp_path / "demo" / cache_key(CORPUS_PATH.read_text(encoding="utf-8"), small)
    final.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(final)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    (left,) = [p for p in final.parent.iterdir() if TEMP_NAME.fullmatch(p.name)]
    assert (left / "demo.vqf").is_file()  # what kill -9 leaves behind
    with staged_folder(final.parent / "other") as live:  # a build still running elsewhere
        model, built = demo_model(small, root=tmp_path)
        assert built and model.is_file()
        assert not left.exists()
        assert live.is_dir()
    hidden = [p.name for p in final.parent.iterdir() if p.name.startswith(".")]
    assert hidden == []
