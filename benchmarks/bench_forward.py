"""The fast forward path against the reference, and the quantized matvec against memory bandwidth.

Not a test: run `python benchmarks/bench_forward.py [--ref-tokens 3] [--fast-tokens 64]`. One run
measures, side by side on this machine (issue 6 targets):
* single-core read bandwidth: one pass over a 256 MiB buffer, best of the passes run just
  before each matvec sweep (so both see the same load of a shared machine);
* Q4_0 / Q8_0 matvec at 2048 x 6144, untiled and in the engine's tiled layouts (the
  spec/numerics.md §q8-activation canonical mode) as GB/s of weights read, on 1 and 2 threads, over
  enough distinct matrices that they cannot stay in the last-level cache; its share of the
  single-core bandwidth (target: Q4_0 >= 50%);
* the prefill product (a [2048, 6144] matrix times 64 and 512 quantized token rows) in
  multiply-adds/s per layout, on 1 and 2 threads;
* decode tokens/s of `weightfile demo`'s model, ref and fast, after the same 8-token prefill,
  and the ratio (target >= 100x); both decoders produce the same logits (checked here too).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from machine import describe_machine

from weightfile.bench.bandwidth import DEFAULT_BUFFER, reader, touched_buffer
from weightfile.demo import demo_model
from weightfile.families import vqf_family
from weightfile.fast._native import current_isa, library
from weightfile.fast.codecs.vqf.tiling import tile
from weightfile.fast.numerics.matrix import FastMatrix, quantize_activation
from weightfile.ref.vqf.read import open_vqf

ROWS, COLS = 2048, 6144
BLOCK_BYTES = {"q4_0": 18, "q8_0": 34}
#: The layouts measured: the legacy untiled rows and the engine's tiled layouts
#: (spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l).
CODECS = ("q4_0", "q4_0_4x4", "q8_0", "q8_0_8x8")
LLC_MULTIPLE_BYTES = 128 * 2**20  # more than any last-level cache this runs on


class ReadProbe:
    """Bytes/s of one core reading a 256 MiB buffer once: the probe `weightfile bench` uses
    (weightfile.bench.bandwidth, fast/csrc/membw.c), so both report the same denominator."""

    def __init__(self) -> None:
        self.read, method = reader()
        assert method == "c", "the C kernels are needed"
        self.words = touched_buffer(DEFAULT_BUFFER)
        self.best = 0.0

    def measure(self) -> float:
        t0 = time.perf_counter()
        self.read(self.words)
        self.best = max(self.best, self.words.nbytes / (time.perf_counter() - t0))
        return self.best


def random_matrix(codec: str, rng: np.random.Generator) -> FastMatrix:
    """A [2048, 6144] payload of random codes with scale 0.01 in every block (tiled layouts:
    the same untiled blocks rearranged by the fast tiling)."""
    base = codec.split("_")[0] + "_0"
    blocks = ROWS * COLS // 32
    raw = rng.integers(0, 256, size=(blocks, BLOCK_BYTES[base]), dtype=np.uint8)
    raw[:, :2] = np.full(blocks, 0.01, dtype="<f2").view(np.uint8).reshape(blocks, 2)
    payload = raw.tobytes() if codec == base else tile(codec, raw.tobytes(), ROWS, COLS)
    return FastMatrix(codec, np.frombuffer(payload, dtype=np.uint8), ROWS, COLS)


def matvec_bandwidth(codec: str, threads: int, repeat: int, probe: ReadProbe) -> float:
    """Bytes/s of weights read by matvec over distinct matrices bigger than the caches in total.

    Each sweep is preceded by a bandwidth probe, so both see the same load of a shared machine."""
    rng = np.random.default_rng(0)
    first = random_matrix(codec, rng)
    mats = [first] + [random_matrix(codec, rng) for _ in range(LLC_MULTIPLE_BYTES // first.nbytes)]
    x = rng.standard_normal(COLS).astype(np.float32)

    def sweep() -> None:
        for m in mats:
            m.matvec(x, threads=threads)

    best = 0.0
    for _ in range(repeat):
        probe.measure()
        t0 = time.perf_counter()
        sweep()
        best = max(best, sum(m.nbytes for m in mats) / (time.perf_counter() - t0))
    return best


def prefill_product_rate(codec: str, tokens: int, threads: int, repeat: int) -> float:
    """Multiply-adds/s of the spec/numerics.md §q8-activation product of one [2048, 6144] matrix
    with `tokens` activation rows already quantized (the blocked prefill product,
    fast/csrc/gemm_x86.c on x86-64 AVX2), best of `repeat` runs."""
    rng = np.random.default_rng(1)
    m = random_matrix(codec, rng)
    codes, scales = quantize_activation(rng.standard_normal((tokens, COLS)).astype(np.float32))
    m.matmat_codes(codes, scales, threads=threads)  # warm: first-touch pages, thread pool
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        m.matmat_codes(codes, scales, threads=threads)
        best = min(best, time.perf_counter() - t0)
    return ROWS * COLS * tokens / best


def decode_rate(model, prompt: list[int], tokens: int) -> tuple[float, list[np.ndarray]]:
    """Decode tokens/s after a prefill of `prompt`, feeding back the greedy choice each step."""
    cache = model.new_cache()
    logits = [model.forward(prompt, cache)[-1]]
    t0 = time.perf_counter()
    for _ in range(tokens):
        logits.append(model.forward([int(np.argmax(logits[-1]))], cache)[0])
    return tokens / (time.perf_counter() - t0), logits


def probe_runs(args: argparse.Namespace) -> int:
    return 4 * args.repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ref-tokens", type=int, default=3)
    ap.add_argument("--fast-tokens", type=int, default=64)
    args = ap.parse_args()
    print(describe_machine())
    lib = library()
    print(f"kernel path: {current_isa(lib)} (WEIGHTFILE_ISA forces one)")
    probe = ReadProbe()
    rates = {
        (codec, threads): matvec_bandwidth(codec, threads, args.repeat, probe)
        for codec in CODECS
        for threads in (1, 2)
    }
    bw = probe.best
    print(f"single-core read bandwidth: {bw / 1e9:.2f} GB/s (best of {probe_runs(args)} passes)")
    for (codec, threads), rate in rates.items():
        print(
            f"{codec} matvec {ROWS}x{COLS}, {threads} thread(s): {rate / 1e9:.2f} GB/s "
            f"= {100 * rate / bw:.0f}% of single-core read bandwidth"
        )
    for codec in CODECS:
        for tokens in (64, 512):
            line = ", ".join(
                f"{n} thread(s) {prefill_product_rate(codec, tokens, n, args.repeat) / 1e9:.1f}"
                for n in (1, 2)
            )
            print(f"{codec} prefill product {ROWS}x{COLS} x {tokens} tokens, GMAC/s: {line}")
    path, _ = demo_model()
    prompt = [5, 17, 3, 9, 40, 2, 11, 8]
    with open_vqf(path) as vqf:
        family = vqf_family(vqf)
        ref = family.reference_model(vqf)
        fast = family.fast_model(vqf)
        ref_rate, ref_logits = decode_rate(ref, prompt, args.ref_tokens)
        fast_rate, fast_logits = decode_rate(fast, prompt, args.fast_tokens)
    same = all(
        np.array_equal(np.asarray(a, np.float32).view(np.uint32), b.view(np.uint32))
        for a, b in zip(ref_logits, fast_logits, strict=False)
    )
    print(f"demo decode: ref {ref_rate:.2f} tokens/s, fast {fast_rate:.1f} tokens/s, "
          f"fast/ref = {fast_rate / ref_rate:.0f}x (logits identical: {same})")  # fmt: skip


if __name__ == "__main__":
    main()
