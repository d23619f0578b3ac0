"""Decode attention at depth: the KV cache position-major (before e7b180d) against head-major
(`FastKVCache` since; issue 33 item 5).

Not a test: `python benchmarks/bench_kv_layout.py [--depths 256,1024,4096] [--rounds 7]`. One
decode step's attention over every layer of the Qwen3-0.6B geometry (16 query / 8 kv heads of
128, 28 layers, each layer its own cache, so the caches come from memory as in a real step):
the same kernel (`wf_attend_tile`) reading a kv head's rows out of `[positions, kv_heads·128]`
rows — 512 B of every 4 KiB row, the cache before e7b180d — and out of a `[kv_heads][positions,
128]` plane, a head's rows contiguous (the cache now). Best of `--rounds`, alternating; both
must give the same bits (the layout moves no arithmetic).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from weightfile.bench.machine import describe_machine
from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import kernels

HEADS, KV_HEADS, HEAD_DIM, LAYERS = 16, 8, 128, 28


def step(lib, q, keys, values, planes: bool, slots, scores, att) -> None:
    """Every layer's and kv head's attention for one query token."""
    group = HEADS // KV_HEADS
    for layer in range(LAYERS):
        for g in range(KV_HEADS):
            if planes:  # a one-kv-head view of head g's plane, rows HEAD_DIM floats apart
                off = g * group * HEAD_DIM * 4
                lib.wf_attend_tile(
                    address(q) + off, HEADS * HEAD_DIM, address(keys[layer, g]),
                    address(values[layer, g]), HEAD_DIM, address(slots), 0, 1, group, 1,
                    HEAD_DIM, 0, address(scores), address(att) + off,
                )  # fmt: skip
            else:
                lib.wf_attend_tile(
                    address(q), HEADS * HEAD_DIM, address(keys[layer]), address(values[layer]),
                    KV_HEADS * HEAD_DIM, address(slots), 0, 1, HEADS, KV_HEADS, HEAD_DIM, g,
                    address(scores), address(att),
                )  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--depths", default="256,1024,4096")
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    lib = kernels()
    print(f"machine: {describe_machine()}")
    for depth in map(int, a.depths.split(",")):
        rng = np.random.default_rng(depth)
        shape = (LAYERS, depth + 1, KV_HEADS * HEAD_DIM)
        keys = rng.standard_normal(shape).astype(np.float32)
        values = rng.standard_normal(shape).astype(np.float32)
        split = (LAYERS, depth + 1, KV_HEADS, HEAD_DIM)
        key_planes = np.ascontiguousarray(keys.reshape(split).transpose(0, 2, 1, 3))
        value_planes = np.ascontiguousarray(values.reshape(split).transpose(0, 2, 1, 3))
        q = rng.standard_normal(HEADS * HEAD_DIM).astype(np.float32)
        slots = np.array([depth], np.int64)
        scores = np.empty(HEADS * (depth + 1) * 16, np.float32)
        att = {False: np.empty_like(q), True: np.empty_like(q)}
        best = {False: float("inf"), True: float("inf")}
        for _ in range(a.rounds):
            for planes, k, v in ((False, keys, values), (True, key_planes, value_planes)):
                start = time.perf_counter()
                step(lib, q, k, v, planes, slots, scores, att[planes])
                best[planes] = min(best[planes], time.perf_counter() - start)
        assert np.array_equal(att[False].view(np.uint32), att[True].view(np.uint32))
        print(
            f"depth {depth}: position-major {best[False] * 1e3:.2f} ms, head-major "
            f"{best[True] * 1e3:.2f} ms a step, {best[False] / best[True]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
