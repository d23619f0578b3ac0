"""Decoding cost at scale: a 50,000-part `.ninfer` binding and a 60,000-tensor VQF file.

    python benchmarks/bench_scale.py [--parts 50000] [--tensors 60000]

Issue 14 measured 217 s for one binding of 50,000 one-element parts (every part re-decoded the
whole parent) and 63 ms per tensor decode in a 60,000-tensor file (the name lookup was a linear
scan). Both are linear now: the binding decodes its parent once, a name is a dict lookup. The
script writes both files in a temporary folder and prints open, decode and per-name times.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from machine import describe_machine

import weightfile
from weightfile.examples import TINY_ARCH
from weightfile.ref.ninfer3.plan import TensorSpec
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.ref.vqf.write import TensorSource
from weightfile.spec.vqf.qtypes import QType


def timed(fn):  # (seconds, result)
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_binding(folder: Path, parts: int) -> None:
    values = np.arange(parts, dtype=np.float32)  # exact in bf16 up to 256, so compare words
    words = (values.view("<u4") >> 16).astype("<u2")
    binding = {"parts": [{"object": "w", "range": [i, i + 1]} for i in reversed(range(parts))]}
    path = folder / "parts.ninfer"
    seconds, _ = timed(
        lambda: write_artifact(
            path,
            {"w": words.tobytes()},
            objects=[TensorSpec("w", (parts,), "bf16", "contiguous_le_v1")],
            components={"text": {"config": {}}},
            bindings={"p": binding},
        )
    )
    print(f"binding of {parts:,} one-element parts: write {seconds:.2f} s, "
          f"entry {path.stat().st_size / 1e6:.1f} MB")  # fmt: skip
    opened, f = timed(lambda: weightfile.open(path))
    with f:
        for engine in ("fast", "ref"):
            seconds, got = timed(lambda engine=engine: f.decode("p", engine=engine))
            want = f.decode("w", engine="fast")[::-1]
            assert np.array_equal(got, want)
            print(f"  open {opened:.2f} s; decode {engine}: {seconds:.3f} s")


def bench_tensors(folder: Path, count: int) -> None:
    path = folder / "many.vqf"
    tensors = [
        TensorSource(f"t{i}", QType.F32, 1, 8, data=np.full(8, i, dtype="<f4").tobytes())
        for i in range(count)
    ]
    seconds, _ = timed(
        lambda: weightfile.write_vqf(path, arch=TINY_ARCH, tensors=tensors, order="given")
    )
    print(f"VQF file of {count:,} tensors: write {seconds:.2f} s, "
          f"{path.stat().st_size / 1e6:.1f} MB")  # fmt: skip
    opened, f = timed(lambda: weightfile.open(path))
    with f:
        names = f.names()
        for engine in ("fast", "ref"):
            sample = names[:: max(1, count // 2000)]  # 2,000 names spread over the directory
            seconds, _ = timed(lambda e=engine, s=sample: [f.decode(n, engine=e) for n in s])
            per = seconds / len(sample) * 1e6
            print(f"  open {opened:.2f} s; decode {engine}: {per:.1f} µs per tensor "
                  f"({len(sample):,} names)")  # fmt: skip
        last = names[-1]
        seconds, value = timed(lambda: f.decode(last))
        assert value[0] == count - 1
        print(f"  the last name: {seconds * 1e6:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=50_000)
    parser.add_argument("--tensors", type=int, default=60_000)
    args = parser.parse_args()
    print(describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        bench_binding(Path(folder), args.parts)
        bench_tensors(Path(folder), args.tensors)


if __name__ == "__main__":
    main()
