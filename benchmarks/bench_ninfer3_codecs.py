"""Throughput of the `.ninfer` v3 codecs on a 4096 × 4096 float32 matrix, measured side by side.

Compares, in one run on one machine:
  * fast `grouped_absmax` + `row_split_k128_v1` (q4, q8) and `fp8_row_maxabs` + `row_scale_v1`,
    encode and decode (decode includes the strict validation), against ref timed per row on a few
    rows and scaled to the whole matrix;
  * fast bf16 (`contiguous_le_v1`) and the fast fp8 row codec against plain ml_dtypes casts
    (`astype(bfloat16)`, `astype(float8_e4m3fn)` and back), which do no scaling or validation.

Run: python benchmarks/bench_ninfer3_codecs.py [--rows-for-ref 4] [--repeat 3]
This is a measurement script, not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

import ml_dtypes
import numpy as np

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec

N = K = 4096
ELEMENTS = N * K


def machine() -> str:
    """CPU model and core count, so the numbers name where they were measured."""
    model = platform.processor() or "unknown cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{model}, {os.cpu_count()} cpus, {system}, numpy {np.__version__}"


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Smallest wall time of `repeat` calls, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def melems(seconds: float, elements: int = ELEMENTS) -> float:
    return elements / seconds / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows-for-ref", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, K), dtype=np.float32)
    r = args.rows_for_ref
    x_ref = np.ascontiguousarray(x[:r])
    print(f"machine: {machine()}")
    print(
        f"matrix: {N} x {K} float32; ref timed on {r} rows x {K} and scaled; best of {args.repeat}"
    )
    header = (
        f"{'codec':<34}{'dir':<8}{'fast Mel/s':>12}{'other':>22}{'Mel/s':>12}{'fast/other':>12}"
    )
    print(header)
    print("-" * len(header))

    def row(name: str, direction: str, fast_s: float, other: str, other_s: float, other_el: int):
        f, o = melems(fast_s), melems(other_s, other_el)
        print(f"{name:<34}{direction:<8}{f:>12.1f}{other:>22}{o:>12.3f}{f / o:>12.1f}")

    pairs = [
        ("q4_g64_fp16", "row_split_k128_v1"),
        ("q8_g32_fp16", "row_split_k128_v1"),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1"),
    ]
    for fmt, layout in pairs:
        fast, ref = fast_get_codec(fmt, layout), ref_get_codec(fmt, layout)
        payload = fast.encode(x, (N, K))
        payload_ref = ref.encode(x_ref, (r, K))
        assert payload_ref == fast.encode(x_ref, (r, K)), "fast != ref on the benchmark rows"
        t_enc = best_of(lambda fast=fast: fast.encode(x, (N, K)), args.repeat)
        t_dec = best_of(lambda fast=fast, p=payload: fast.decode(p, (N, K)), args.repeat)
        t_ref_enc = best_of(lambda ref=ref: ref.encode(x_ref, (r, K)), 1)
        t_ref_dec = best_of(lambda ref=ref, p=payload_ref: ref.decode(p, (r, K)), 1)
        name = f"{fmt}/{layout}"
        row(name, "encode", t_enc, "ref per row", t_ref_enc, r * K)
        row(name, "decode", t_dec, "ref per row", t_ref_dec, r * K)
        if fmt.startswith("fp8"):
            t_md_enc = best_of(lambda: x.astype(ml_dtypes.float8_e4m3fn), args.repeat)
            f8 = x.astype(ml_dtypes.float8_e4m3fn)
            t_md_dec = best_of(lambda f8=f8: f8.astype(np.float32), args.repeat)
            row(name, "encode", t_enc, "ml_dtypes e4m3fn cast", t_md_enc, ELEMENTS)
            row(name, "decode", t_dec, "ml_dtypes e4m3fn cast", t_md_dec, ELEMENTS)

    bf16 = fast_get_codec("bf16", "contiguous_le_v1")
    payload = bf16.encode(x, (N, K))
    assert payload == x.astype(ml_dtypes.bfloat16).tobytes()
    t_enc = best_of(lambda: bf16.encode(x, (N, K)), args.repeat)
    t_dec = best_of(lambda: bf16.decode(payload, (N, K)), args.repeat)
    t_md_enc = best_of(lambda: x.astype(ml_dtypes.bfloat16).tobytes(), args.repeat)
    b = np.frombuffer(payload, dtype=ml_dtypes.bfloat16).reshape(N, K)
    t_md_dec = best_of(lambda: b.astype(np.float32), args.repeat)
    row("bf16/contiguous_le_v1", "encode", t_enc, "ml_dtypes bf16 cast", t_md_enc, ELEMENTS)
    row("bf16/contiguous_le_v1", "decode", t_dec, "ml_dtypes bf16 cast", t_md_dec, ELEMENTS)


if __name__ == "__main__":
    main()
