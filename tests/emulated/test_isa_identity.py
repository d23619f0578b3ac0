"""One model, identical bits on every ISA (README "Reproducibility").

Every model case of the conformance corpus — Qwen3 dense, MoE and VL over VQF, the board
profile, Qwen3.5 over `.ninfer` — is answered by the fast engine on every kernel path of this
machine (portable C, AVX2, AVX-512 where present) and on aarch64 (portable, NEON, NEON + dotprod)
with the whole package running under qemu-user; each answer must equal the reference's expected
logits bits and trace digests. Without the tools the aarch64 half skips, except under CI, where
it fails (.ci/run installs them).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from weightfile.conformance.runner import case_ids

from .arm64_python import ensure_environment, missing_tools, package_tree, run_python

DRIVER = Path(__file__).with_name("isa_models.py")
CASES = len(case_ids(pattern="*model/*"))


def answers(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def check_every_path(found: dict, want_isas: set[str]) -> None:
    assert set(found["isas"]) >= want_isas, found["isas"].keys()
    for isa, result in found["isas"].items():
        assert result["failed"] == [], (isa, result["failed"][:3])
        assert result["passed"] == CASES > 20, isa


def test_every_x86_kernel_path_gives_the_reference_bits() -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("not an x86-64 machine")
    done = subprocess.run([sys.executable, str(DRIVER)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    check_every_path(answers(done.stdout), {"portable", "avx2"})


def test_aarch64_python_under_qemu_gives_the_reference_bits(tmp_path: Path) -> None:
    missing = missing_tools()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {missing} (see .ci/run)")
        pytest.skip(f"{missing} not installed")
    env_dir = ensure_environment()
    tree = package_tree(tmp_path / "pkg")
    # the kernel library's cache is keyed by the sources' hash: safe to keep between runs
    out = run_python(env_dir, tree, [str(DRIVER)], env_dir / "native-cache")
    found = answers(out)
    assert found["machine"] == "aarch64"
    check_every_path(found, {"portable", "neon", "dotprod"})
