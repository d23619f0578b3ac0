"""No C kernel reads or writes outside the arrays it is given (issue 36 item 9).

An out-of-bounds access -- a leftover-rows bound off by one in a SIMD row loop that writes past
the output and reads past the payload, a vector tail that runs past n -- leaves every value a
kernel returns right and corrupts memory nobody checks: the process aborts at exit, or not at
all, and no test names it. Here every array lives between two PROT_NONE pages, flush against one
of them (tests/fast/guarded_kernels.py), so the first stray byte is a SIGSEGV inside the kernel
call; the calls run in a child process, which names its current case before each call, so the
failure names the kernel, path (spec/numerics.md §kernel-paths), layout, shape, tokens and
threads. The values themselves are the fast == ref properties' business
(tests/differential/test_matmat_fast_eq_ref.py, tests/fast/test_model_ops.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from weightfile.fast._native import library

DRIVER = Path(__file__).with_name("guarded_kernels.py")

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap/mprotect via libc"),
    pytest.mark.skipif(library() is None, reason="no C kernels here"),
]


def run_fenced(group: str) -> None:
    """Run one group of the driver's kernel calls; fail naming the case a fault killed."""
    cmd = [sys.executable, str(DRIVER), group]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = out.stdout.strip().splitlines()
    if out.returncode == 0 and lines and lines[-1] == "done":
        return
    why = (
        f"killed by {signal.Signals(-out.returncode).name}"
        if out.returncode < 0
        else f"exit status {out.returncode}"
    )
    last = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    pytest.fail(
        f"a C kernel touched memory outside its arrays ({why}) in the case\n  {last}\n"
        f"(after {max(len(lines) - 1, 0)} clean calls)\nstderr:\n{out.stderr[-3000:]}",
        pytrace=False,
    )


def test_quantized_products_stay_inside_payload_activations_and_outputs() -> None:
    """wf_matmat_q8_activation_set (one and three matrices) and wf_matmat_f32 on every
    quantized layout, every row count through two 16-row bands, 1-6 tokens, 1-3 threads."""
    run_fenced("products")


def test_dense_products_stay_inside_their_arrays() -> None:
    """wf_matmat_f32 on F32 / F16 weights, rows 1..35, any cols."""
    run_fenced("dense")


def test_elementwise_kernels_stay_inside_their_arrays() -> None:
    """exp, swiglu, rmsnorm (every length 1..67) and the activation quantizers."""
    run_fenced("elementwise")
