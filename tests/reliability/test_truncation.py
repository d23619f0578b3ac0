"""A file shortened after it was opened is reported, not a SIGBUS (spec/ninfer3.md §safe-files).

The reproducer of issue 14: open, truncate the file, decode. Before the size re-check this killed
the process with SIGBUS (rc -7) in both containers and with both engines, so it runs in a child
process: a regression shows as rc -7 here rather than as a dead test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from strategies.ninfer3 import SHARDED_PAYLOAD, build_file_set, sharded_doc

from weightfile.examples import EXAMPLE_PATH

ROOT = Path(__file__).resolve().parents[2]


def _child(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.split()


@pytest.mark.parametrize("engine", ["fast", "ref"])
def test_a_vqf_file_truncated_after_open(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "m.vqf"
    path.write_bytes(EXAMPLE_PATH.read_bytes())
    got = _child(
        f"""
        import os, weightfile
        from weightfile.spec.errors import FileAccessError
        with weightfile.open({str(path)!r}) as f:
            name = f.names()[-1]
            f.decode(name, engine={engine!r})          # reads fine while whole
            os.truncate({str(path)!r}, 4096)
            for n in f.names():
                try:
                    f.decode(n, engine={engine!r})
                except FileAccessError as exc:
                    print(exc.rule)
                    break
            else:
                print("decoded")
        """
    )
    assert got == ["format.file.shrunk"]


def test_a_ninfer_volume_truncated_after_open(tmp_path: Path) -> None:
    paths = build_file_set(tmp_path, "s.ninfer", sharded_doc(), SHARDED_PAYLOAD)
    got = _child(
        f"""
        import os
        from weightfile.ref.ninfer3.read import open_artifact
        from weightfile.spec.errors import FileAccessError
        with open_artifact({str(paths[0])!r}) as a:
            bytes(a.read_range(600, 100))  # part 1 opened and read while whole
            for victim, (offset, length) in (({str(paths[1])!r}, (600, 100)),
                                              ({str(paths[0])!r}, (10, 20))):
                os.truncate(victim, 4096)
                try:
                    bytes(a.read_range(offset, length))
                    print("read")
                except FileAccessError as exc:
                    print(exc.rule, exc.offset)
        """
    )
    assert got == ["format.file.shrunk", "4096", "format.file.shrunk", "4096"]
