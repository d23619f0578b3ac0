"""One fast Qwen3.5 call (a decode step, or a prefill of T tokens) split into the matrix products
and everything else (issue 28: the non-product part of a decode step).

    python3 benchmarks/bench_qwen35_steps.py MODEL.ninfer --threads 1 --tokens 1 --steps 16
    python3 benchmarks/bench_qwen35_steps.py MODEL.ninfer --tokens 64 --profile

Products are the time inside `NfMatrix.matmat`, `matmat_set` and `ProductSet` calls (wrapped
here, outermost call only), so the same script measures an older tree of fast/qwen35/ too: run
it alternately with each tree's Python to compare. Prints one JSON line: the best call's total,
products and rest in ms, and the median total; `--profile` adds cProfile's top functions by own
time (a C call's time counts to the Python function that makes it).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import pstats
import statistics
import time

from weightfile.fast.qwen35 import attention, ffn, gdn, matrix, open_model
from weightfile.ref.ninfer3.read import open_artifact

SPENT = {"products": 0.0, "depth": 0}


def timed(fn):
    """fn, its time (outermost call only) added to SPENT["products"]."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if SPENT["depth"]:
            return fn(*args, **kwargs)
        SPENT["depth"] = 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT["products"] += time.perf_counter() - start
            SPENT["depth"] = 0

    return wrapper


def wrap_products() -> None:
    matrix.NfMatrix.matmat = timed(matrix.NfMatrix.matmat)
    if hasattr(matrix, "ProductSet"):
        matrix.ProductSet.__call__ = timed(matrix.ProductSet.__call__)
    wrapped = timed(matrix.matmat_set)
    for module in (matrix, attention, ffn, gdn):
        if hasattr(module, "matmat_set"):
            module.matmat_set = wrapped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=1, help="tokens a call (1: decode)")
    ap.add_argument("--steps", type=int, default=16, help="timed calls")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    wrap_products()
    with open_artifact(a.model) as nf:
        model = open_model(nf, threads=a.threads)
        cache = model.new_cache()
        model.forward([1, 2, 3, 4], cache, logits="last")  # binds, fills the page cache
        rows, prof = [], cProfile.Profile() if a.profile else None
        for s in range(a.steps):
            ids = [(7 * s + j) % 1000 for j in range(a.tokens)]
            if a.tokens > 1:
                cache = model.new_cache()
            SPENT["products"] = 0.0
            if prof is not None:
                prof.enable()
            start = time.perf_counter()
            model.forward(ids, cache, logits="last")
            total = time.perf_counter() - start
            if prof is not None:
                prof.disable()
            rows.append((total, SPENT["products"]))
    best = min(rows)
    print(json.dumps({
        "threads": a.threads, "tokens": a.tokens, "steps": a.steps,
        "best_ms": round(best[0] * 1e3, 2), "products_ms": round(best[1] * 1e3, 2),
        "rest_ms": round((best[0] - best[1]) * 1e3, 2),
        "median_ms": round(statistics.median(r[0] for r in rows) * 1e3, 2),
    }))  # fmt: skip
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
