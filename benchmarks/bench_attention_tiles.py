"""Prefill attention, one query at a time against tiles of queries × positions (issue 33 item 1).

Not a test: `python benchmarks/bench_attention_tiles.py [--tokens 512] [--rounds 3]`. A T-token
prompt into an empty cache, for every kv head: the per-token kernel (`wf_attend_group`, the form
layers.c ran before) and the tile kernel (`wf_attend_tile`, fast/csrc/attention_tiles.c) on the
same random q / K / V, alternating, best of `--rounds`; the outputs must be the same bits. Prints
seconds per layer for both and the ratio, for the Qwen3-0.6B (16 / 8 heads) and Qwen3-30B-A3B
(32 / 4) attention geometries, on the kernel path in use (WEIGHTFILE_ISA chooses another).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from weightfile.bench.machine import describe_machine
from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import kernels

GEOMETRIES = {"qwen3-0.6b": (16, 8, 128), "qwen3-30b-a3b": (32, 4, 128)}


def per_token(lib, q, keys, values, slots, heads, kv, hd, scores, att) -> None:
    for g in range(kv):
        for t in range(len(slots)):
            lib.wf_attend_group(
                address(q[t]), address(keys), address(values), int(slots[t]) + 1, kv * hd,
                heads, kv, hd, g, address(scores), address(att[t]),
            )  # fmt: skip


def tiled(lib, q, keys, values, slots, heads, kv, hd, scores, att) -> None:
    tile = lib.wf_attend_tile_tokens(heads, kv)
    for g in range(kv):
        for t0 in range(0, len(slots), tile):
            lib.wf_attend_tile(
                address(q), heads * hd, address(keys), address(values), kv * hd, address(slots),
                t0, min(t0 + tile, len(slots)), heads, kv, hd, g, address(scores), address(att),
            )  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    lib = kernels()
    print(f"machine: {describe_machine()}")
    for name, (heads, kv, hd) in GEOMETRIES.items():
        rng = np.random.default_rng(1)
        T = a.tokens
        q = rng.standard_normal((T, heads * hd)).astype(np.float32)
        keys = rng.standard_normal((T, kv * hd)).astype(np.float32)
        values = rng.standard_normal((T, kv * hd)).astype(np.float32)
        slots = np.arange(T, dtype=np.int64)
        scores = np.empty(heads * T * 16, np.float32)
        best = {"per-token": float("inf"), "tiles": float("inf")}
        outs = {}
        for _ in range(a.rounds):
            for label, fn in (("per-token", per_token), ("tiles", tiled)):
                att = np.full((T, heads * hd), np.nan, np.float32)
                t = time.perf_counter()
                fn(lib, q, keys, values, slots, heads, kv, hd, scores, att)
                best[label] = min(best[label], time.perf_counter() - t)
                outs[label] = att
        same = np.array_equal(outs["per-token"].view(np.uint32), outs["tiles"].view(np.uint32))
        ratio = best["per-token"] / best["tiles"]
        print(f"{name} ({heads}/{kv} heads x {hd}), {T} tokens, one layer: per-token "
              f"{best['per-token'] * 1e3:.1f} ms, tiles {best['tiles'] * 1e3:.1f} ms "
              f"({ratio:.2f}x), same bits: {same}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
