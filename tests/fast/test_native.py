"""The kernel build: the contract's flags, a cache keyed by source, and a clear fallback."""

import subprocess
import sys

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
