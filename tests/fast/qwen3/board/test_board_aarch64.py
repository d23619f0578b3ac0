"""fast/csrc/board.c built for aarch64 and run under qemu-aarch64 gives the bits the host's
build gives (and so the reference's): products in every form, both RMSNorm orders and the SiLU
(spec/numerics.md §board-products, §board-rmsnorm, §board-exp). The board's own ISA, with its fused
multiply-add instructions, must not change a value. Without the tools the test skips, except under
CI (env CI set).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import weightfile.fast
from weightfile.fast.qwen3.board import ops
from weightfile.ref.numerics.matrix import QuantMatrix

CC, QEMU = "aarch64-linux-gnu-gcc", "qemu-aarch64"
CSRC = Path(weightfile.fast.__file__).with_name("csrc")
FLAGS = ("-O2", "-ffp-contract=off", "-march=armv8.2-a+dotprod", "-static", "-std=c11")
F32 = np.float32


@pytest.fixture(scope="module")
def driver() -> Path:
    missing = [t for t in (CC, QEMU) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {missing}")
        pytest.skip(f"{missing} not installed")
    out = Path(tempfile.mkdtemp()) / "board_driver"
    src = [str(Path(__file__).with_name("board_driver.c")), str(CSRC / "board.c")]
    built = subprocess.run(
        [CC, *FLAGS, "-o", str(out), *src, "-lm", "-lpthread"], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    return out


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([(-8, 7), (-127, 127)]))
def test_aarch64_build_gives_the_host_bits(driver: Path, seed: int, code_range) -> None:
    rng = np.random.default_rng(seed)
    rows, cols = 9, 96
    codes = rng.integers(*code_range, size=(rows, cols), endpoint=True).astype(np.int8)
    sb = np.asarray(rng.uniform(1e-4, 0.05, (rows, cols // 32)), np.float16).view(np.uint16)
    x = (rng.standard_normal(cols) * 3).astype(F32)
    x[::7] = np.round(x[::7] * 2) / 2  # half-integers: quantizer ties when amax is 127
    m = QuantMatrix(codes, sb)
    c, d = ops.quantize_act(x)
    want = [ops.q4_decode(m, c, d), ops.single_chain(m, c, d)]
    want.append(ops._matvec(m, c, d, ops.FORM_Q8_PREFILL, 1))
    want += [ops.rmsnorm_tree8(x, x, F32(1e-6)), ops.rmsnorm_sequential(x, x, F32(1e-6))]
    want.append(ops.silu_mul(x, x))
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in", Path(tmp) / "out"
        src.write_bytes(
            np.array([rows, cols], "<i8").tobytes() + codes.tobytes() + sb.astype("<u2").tobytes()
            + x.astype("<f4").tobytes()
        )  # fmt: skip
        subprocess.run([QEMU, str(driver), str(src), str(dst)], check=True, timeout=60)
        got = np.frombuffer(dst.read_bytes(), "<f4")
    assert np.array_equal(got.view(np.uint32), np.concatenate(want).view(np.uint32))
