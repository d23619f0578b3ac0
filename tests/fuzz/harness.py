"""Run mutated file sets through the library in a bounded worker and classify what happens.

Each input is written to a scratch folder, then a worker process (started once, restarted after a
crash or a timeout) runs `weightfile.validate`, `weightfile.open`, `names()` and `decode(name)`
with the fast engine for every name — and for a chosen fraction of inputs the ref engine too,
which must give the same float32 bits. The worker runs under RLIMIT_AS, so an unbounded
allocation fails fast instead of taking the machine.

Outcomes (issue 14 item 6):
  * ``ok``      -- every step succeeded;
  * ``typed``   -- a step raised a `WeightfileError` (our hierarchy, with its rule id);
  * ``memory``  -- MemoryError or ENOMEM under the address-space limit;
  * ``timeout`` -- the input took longer than the per-input limit (the worker is killed);
  * ``other``   -- anything else: a raw exception, a crash by signal, a fast/ref mismatch, or a
    set that `validate` calls valid and then fails to decode. Each one is a bug.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fuzz.mutate import Seed, write_set

OUTCOMES = ("ok", "typed", "memory", "timeout", "other")
WORKER = Path(__file__).with_name("worker.py")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    outcome: str
    detail: str  # rule id, exception text or signal


class Worker:
    """One persistent worker subprocess; `run` enforces the per-input timeout."""

    def __init__(self, mem_mb: int = 1536, timeout: float = 10.0) -> None:
        self.mem_mb = mem_mb
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")])
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(self.mem_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # the worker says so once its imports are done
        if ready.strip() != "ready":
            raise RuntimeError(f"fuzz worker did not start: {ready!r}")
        return proc

    def run(self, entry: Path, ref: bool, decode: bool) -> Result:
        if self.proc is None:  # a worker that died is reported by the input that killed it
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        job = {"path": str(entry), "ref": ref, "decode": decode}
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
        if not ready:
            self.stop()
            return Result("timeout", f"> {self.timeout:g} s")
        line = proc.stdout.readline()
        if not line:
            return self._died()
        out = json.loads(line)
        return Result(out["outcome"], out["detail"])

    def _died(self) -> Result:
        assert self.proc is not None
        rc = self.proc.wait()
        self.proc = None
        name = signal.Signals(-rc).name if rc < 0 else f"exit {rc}"
        return Result("other", f"worker died: {name}")

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only it and children
            self.proc.wait()
            self.proc = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Scratch:
    """A scratch folder reused for every input (emptied before each write)."""

    def __init__(self) -> None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.path = Path(tempfile.mkdtemp(prefix="wf-fuzz-", dir=base))

    def write(self, seed: Seed, files: dict[str, bytes | None]) -> Path:
        for p in self.path.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        return write_set(self.path, seed, files)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def reproducer(seed: Seed, files: dict[str, bytes | None], folder: Path) -> Path:
    """Write a failing input to `folder` (one subfolder per input) so it can be replayed with
    `python tests/fuzz/worker.py --once ENTRY`; returns the entry path."""
    folder.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="repro-", dir=folder))
    return write_set(out, seed, files)
