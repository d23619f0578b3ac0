"""The row-worker pool of fast/csrc/wf_common.c: any thread count gives the same bits, calls
from several Python threads and from a forked child finish (run in a subprocess with a timeout,
so a deadlock fails the test instead of hanging the suite)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, threading
    import numpy as np
    from weightfile.fast.numerics import matrix
    from weightfile.fast.numerics.matrix import FastMatrix

    matrix.MIN_ELEMENTS_PER_THREAD = 1  # let tiny products use every thread asked for
    rng = np.random.default_rng(1)
    rows, cols = 37, 256
    raw = rng.integers(0, 256, size=(rows * cols // 32, 34), dtype=np.uint8)
    raw[:, :2] = np.full(len(raw), 0.01, "<f2").view(np.uint8).reshape(-1, 2)
    m = FastMatrix("q8_0", raw.reshape(-1), rows, cols)
    x = rng.standard_normal((2, cols)).astype(np.float32)
    want = m.matmat(x, threads=1).view(np.uint32)
    bad = []

    def run(k):
        for i in range(300):
            got = m.matmat(x, threads=1 + (i * 7 + k) % 6).view(np.uint32)
            bad.append(not (got == want).all())

    workers = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not any(bad), "a thread count changed the bits"
    pid = os.fork()
    if pid == 0:
        same = all((m.matmat(x, threads=t).view(np.uint32) == want).all() for t in (2, 3, 4))
        os._exit(0 if same else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, "the forked child failed"
    print("ok")
    """
)


def test_pool_is_deterministic_concurrent_and_fork_safe() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_thread_policy_is_the_c_one(monkeypatch) -> None:
    """fast/numerics/matrix.py threads_for asks wf_threads_for (wf_common.c), the one copy of
    the rule: the threads asked, capped at one per MIN_ELEMENTS_PER_THREAD of work, at least 1."""
    from weightfile.fast._native import library
    from weightfile.fast.numerics import matrix

    if library() is None:
        pytest.skip("no C compiler: the kernels cannot be built")
    monkeypatch.setattr(matrix, "MIN_ELEMENTS_PER_THREAD", 100)
    got = [
        matrix.threads_for(asked, work) for asked, work in ((8, 350), (2, 10**12), (4, 99), (4, 0))
    ]
    assert got == [3, 2, 1, 1]
    assert library().wf_threads_for(8, 350, 0) == 8  # a bound below 1 counts as 1
