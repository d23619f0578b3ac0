"""Why llama.cpp's Qwen3.5 q8 logits differ from ours (spec/ninfer3.md §qwen35-gguf): an
experiment, not a test.

ggml multiplies a Q8_0 matrix by a vector only after quantising the vector to Q8_0 blocks
(per 32 elements: d = amax / 127 in binary32, codes rint(x · (127 / amax)) with ties to even,
d stored as binary16), where a `.ninfer` q8_g32_fp16 product keeps the vector in binary32
(spec/numerics.md §f32-weights). This script runs the reference decoder (`--engine ref`) on the
crosscheck's q8 `.ninfer` files with that rounding applied to every matrix-vector input (each
matrix in these files is Q8_0 in the GGUF export), and llama.cpp on the exported GGUF with binary32
K/V and flash attention off, and prints max |Δ logit| ÷ max |logit| at the prompt's last position
and the greedy tokens, beside the same numbers without the emulation.

`python benchmarks/llamacpp_q8_activations.py [--seed N] [--llama-dir DIR] [--bindings DIR]`
(defaults as benchmarks/llamacpp_crosscheck.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llamacpp_crosscheck as cc


def q8_0_activation(x: list) -> list[np.float32]:
    """`x` rounded as ggml's quantize_row_q8_0 does (module docstring), as binary32 values."""
    a = np.asarray(x, np.float32).reshape(-1, 32)
    amax = np.max(np.abs(a), axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        inv = np.where(amax == 0, 0, np.float32(127) / amax).astype(np.float32)
    d = (amax / np.float32(127)).astype(np.float32).astype(np.float16).astype(np.float32)
    return list((np.rint(a * inv) * d).astype(np.float32).reshape(-1))


def bf16_activation(x: list) -> list[np.float32]:
    """`x` rounded to bf16 (nearest, ties to even; these are finite), as ggml rounds the vector
    of a BF16 matrix product."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return list(bits.astype(np.uint32).view(np.float32))


#: The activation rounding ggml applies for each exported matrix format
ROUNDING = {"q8_g32_fp16": q8_0_activation, "bf16": bf16_activation}


def ours_emulated(
    nf: Path, fmt: str, prompt: list[int], steps: int, out: Path
) -> tuple[np.ndarray, list]:
    """The reference decoder with every matrix-vector input rounded as `ROUNDING[fmt]`."""
    rounding = ROUNDING[fmt]
    from weightfile.cli import main
    from weightfile.ref.numerics import kernels

    plain = kernels.Kernels.matvec

    def matvec(self, m, x):  # type: ignore[no-untyped-def]
        return plain(self, m, rounding(x) if len(x) % 32 == 0 else x)

    kernels.Kernels.matvec = matvec  # type: ignore[method-assign]
    argv = ["run", str(nf), "--engine", "ref", "--token-ids", ",".join(map(str, prompt)),
            "--max-tokens", str(steps), "--save-logits", str(out)]  # fmt: skip
    try:
        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
            main(argv)
    finally:
        kernels.Kernels.matvec = plain  # type: ignore[method-assign]
    arrays = np.load(out)
    logits = np.asarray(arrays["prefill.logits"], np.float32)
    width = int(arrays["decode.step0.logits"].size)
    return logits.reshape(-1, width)[-1], [int(t) for t in arrays["decode.tokens"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-dir", type=Path, default=None)
    ap.add_argument("--bindings", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    llama_dir = args.llama_dir or cc.default_llama_dir()
    if not (llama_dir / "libllama.so").exists():
        print(f"no libllama.so in {llama_dir}: build llama.cpp (benchmarks/vs_llamacpp.py --build)")
        return 0
    L = cc.bindings(llama_dir, args.bindings or cc.default_bindings())
    rng = np.random.default_rng(args.seed)
    prompt = [int(t) % 300 for t in rng.integers(3, cc.SIZES["vocab_size"], size=12)]
    work = Path(tempfile.mkdtemp(prefix="wf-q8act-"))
    rows = []
    try:
        for label, moe, fmt in cc.QWEN35_CASES:
            nf, gguf = cc.qwen35_files(work, label, moe, fmt, args.seed)
            a, ta = cc.ours(nf, prompt, args.steps, work)
            out = work / f"{nf.parent.name}-emul.npz"
            e, te = ours_emulated(nf, fmt, prompt, args.steps, out)
            b, tb = cc.theirs(L, gguf, prompt, args.steps, f32_cache=True)
            rows.append((label, cc.compare(a, ta, b, tb, args.steps),
                         cc.compare(e, te, b, tb, args.steps)))  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"seed {args.seed}, prompt {prompt}; llama.cpp: binary32 K/V, flash attention off")
    print("| case | ours ~ llama.cpp (file) | ours, activations rounded as ggml ~ llama.cpp |")
    print("|---|---:|---:|")
    for label, plain, emul in rows:
        cells = [f"{r['max_rel']:.2e}, {r['tokens_agree']}/{r['tokens']}" for r in (plain, emul)]
        print(f"| {label} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
