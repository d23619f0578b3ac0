"""The kernel build: the contract's flags, a cache keyed by source, and a clear fallback."""

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from weightfile.fast import _native


def test_every_build_disables_fp_contraction():
    assert "-ffp-contract=off" in _native.flags()


def test_build_is_cached_by_source_hash(tmp_path):
    cc = _native.compiler()
    assert cc is not None, "CI machines have a C compiler"
    src = tmp_path / "k.c"
    src.write_text("int wf_one(void) { return 1; }\n")
    first = _native.build(cc, [src], tmp_path / "out")
    assert _native.build(cc, [src], tmp_path / "out") == first
    src.write_text("int wf_one(void) { return 2; }\n")
    assert _native.build(cc, [src], tmp_path / "out") != first


def test_a_killed_compile_leaves_no_library_behind_for_long(tmp_path):
    """A compile killed with SIGKILL never reaches build()'s cleanup; the next build in the
    same cache deletes its leftover once it is older than any live compile, and leaves a
    younger one (another process may be compiling into it)."""
    import os
    import time

    cc = _native.compiler()
    assert cc is not None, "CI machines have a C compiler"
    out = tmp_path / "out"
    out.mkdir()
    old, young = out / ".build-killed.so", out / ".build-running.so"
    old.write_bytes(b"half a library")
    young.write_bytes(b"being written")
    past = time.time() - _native.STALE_BUILD_SECONDS - 60
    os.utime(old, (past, past))
    src = tmp_path / "k.c"
    src.write_text("int wf_one(void) { return 1; }\n")
    built = _native.build(cc, [src], out)
    assert not old.exists()
    assert young.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([built.name, young.name])


def test_no_compiler_gives_a_warning_and_the_reference_result(tmp_path):
    code = (
        "import warnings; warnings.simplefilter('error');\n"
        "from weightfile.fast.vqf.fnv1a64 import fnv1a64\n"
        "try:\n    fnv1a64(b'a')\nexcept RuntimeWarning as w:\n    print('WARN', w)\n"
        "warnings.simplefilter('ignore'); print(hex(fnv1a64(b'a')))\n"
    )
    env = {"CC": str(tmp_path / "no-such-cc"), "WEIGHTFILE_CACHE": str(tmp_path), "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "WARN weightfile: C kernels unavailable" in out.stdout, out.stderr
    assert out.stdout.strip().endswith("0xaf63dc4c8601ec8c")


ISA_SCRIPT = (
    "from weightfile.fast import _native\n"
    "from weightfile.spec.errors import UnsupportedError\n"
    "try:\n"
    "    lib = _native.library()\n"
    "    print('path', _native.current_isa(lib), lib.wf_simd_path())\n"
    "except UnsupportedError as e:\n"
    "    print('refused', e.rule, e)\n"
)


def run_with_isa(value: str) -> str:
    import os

    env = {**os.environ, "WEIGHTFILE_ISA": value}
    cmd = [sys.executable, "-c", ISA_SCRIPT]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_weightfile_isa_forces_a_path_and_refuses_a_missing_one() -> None:
    """spec/numerics.md §kernel-paths: WEIGHTFILE_ISA=portable runs the portable path (wf_simd_path
    0); a path this machine or build cannot run, or no path at all, is refused with native.isa."""
    rule = "native.isa"
    assert rule == _native.ISA_RULE
    assert run_with_isa("portable") == "path portable 0"
    usable = _native.usable_isas()
    assert "portable" in usable and _native.current_isa() in usable
    missing = [n for n in _native.ISAS if n not in usable]
    assert missing, "no machine has every path of both architectures"
    refused = run_with_isa(missing[0])
    assert refused.startswith(f"refused {rule}") and f"WEIGHTFILE_ISA={missing[0]}" in refused
    assert run_with_isa("sse9").startswith(f"refused {rule}")


def test_each_isa_forces_every_usable_path_then_restores() -> None:
    lib = _native.library()
    before = _native.current_isa(lib)
    seen = [(name, lib.wf_simd_path()) for name in _native.each_isa()]
    assert seen == [(n, _native.ISAS[n]) for n in _native.usable_isas()]
    assert _native.current_isa(lib) == before


def cpu_flags() -> set[str]:
    """The flags of the first processor in /proc/cpuinfo (Linux)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"),
    reason="reads the x86-64 flags of /proc/cpuinfo",
)
def test_avx512_is_usable_iff_the_cpu_has_it() -> None:
    """spec/numerics.md §kernel-paths: the avx512 path is usable (and the default) exactly when the
    CPU reports AVX-512 F/BW/VL + VNNI and AVX2 + F16C; avx2 stays usable beside it."""
    flags = cpu_flags()
    has_avx2 = {"avx2", "f16c"} <= flags
    has_avx512 = has_avx2 and {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= flags
    usable = _native.usable_isas()
    assert ("avx512" in usable) == has_avx512
    assert ("avx2" in usable) == has_avx2
    best = "avx512" if has_avx512 else "avx2" if has_avx2 else "portable"
    assert run_with_isa("") == f"path {best} {_native.ISAS[best]}"
