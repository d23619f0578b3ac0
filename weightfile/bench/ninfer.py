"""`weightfile bench` on a `.ninfer` Qwen3.5 / 3.6 file (issue 28 item 3): the VQF report's
shape (weightfile/bench/report.py: llama-bench's pp/tg rows, the measured bandwidth, bytes read
per decoded token and the roofline, fast/ref, peak RSS against its bound) for the fast family
`weightfile.fast.qwen35`.

* Bytes per decoded token: every matrix parameter's bound bytes (its element ranges' share of
  their objects, spec/ninfer3.md §binding), the routed experts counted at top_k / experts of
  theirs (the expected share; the output head and everything else whole), the direct parameters
  but the embedding, of which one row.
* ref: the reference forward pass on small models; above engines.REF_MEASURE_LIMIT multiply-adds
  a token it is estimated, as for VQF: the reference's matvec (`Kernels.matvec` of a float32
  DenseMatrix, what `ref.qwen35` runs) timed on the first ESTIMATE_ROWS rows of every matrix shape
  at its real column count, scaled to all rows. The Gated DeltaNet recurrence, convolution, norms
  and attention are not counted: the estimate is a lower bound of the reference's time, so the
  fast/ref ratio it gives is one too.
* Peak RSS: a child process (weightfile/bench/peak_rss.py) against file + recurrent state
  (conv windows and delta-rule states of every GDN layer) + KV cache + activations.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.bench import engines, measure
from weightfile.bench.peak_rss import ACTIVATION_MULTIPLE, F32, measure_peak_rss
from weightfile.bench.progress import Progress
from weightfile.bench.report import (
    RSS_NOISE_BYTES,
    RSS_TINY,
    SCHEMA,
    Plan,
    bandwidth_section,
    build_section,
    depth_notes,
    machine_section,
    row_dict,
    speedup_of,
    thread_bandwidths,
)
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.ref.qwen35.bind import bind_config, resolve
from weightfile.ref.qwen35.config import Qwen35Config
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, text_parameters
from weightfile.spec.numerics.profile import CANONICAL

EMBEDDING = TEXT_PREFIX + "token_embedding"
NINFER_ESTIMATED = (
    "ref estimated: one reference token at this size takes minutes, so its matvec was timed on "
    f"the first {engines.ESTIMATE_ROWS} rows of every matrix shape and scaled to all rows (the "
    "Gated DeltaNet recurrence, convolution, norms and attention not counted: a lower bound of "
    "its time, so fast/ref is a lower bound too)"
)


def routed_share(c: Qwen35Config, name: str) -> float:
    """The expected share of a parameter read per decoded token: top_k / experts for a routed
    expert's matrix, 1 for everything else."""
    return c.num_experts_per_tok / c.num_experts if "/moe/experts/" in name else 1.0


def per_token(nf: Any, c: Qwen35Config) -> tuple[int, int, dict[tuple[int, int], float]]:
    """(weight bytes read per decoded token, multiply-adds per token, matrix shape -> how many
    per token)."""
    total, macs, shapes = 0.0, 0.0, {}
    for p in text_parameters(c.json):
        share = routed_share(c, p.name)
        ranges = resolve(nf, p)
        for r in ranges:
            o = nf.object(r.object_id)
            elements = int(np.prod(o.shape))
            if p.name == EMBEDDING:
                share = p.shape[1] / (r.end - r.begin)  # one row of it
            total += share * o.bytes * (r.end - r.begin) / elements
        if not p.is_direct:
            shape = (p.shape[0], p.shape[1])
            shapes[shape] = shapes.get(shape, 0.0) + share
            macs += share * p.shape[0] * p.shape[1]
    return round(total), round(macs), shapes


def estimate_ref_token_seconds(shapes: dict[tuple[int, int], float]) -> float:
    """Σ over matrix shapes of (the ref matvec's time on k rows) · rows / k · count per token."""
    kernels = kernels_for(CANONICAL)
    total = 0.0
    for (rows, cols), count in shapes.items():
        k = min(engines.ESTIMATE_ROWS, rows)
        values = np.random.default_rng(0).standard_normal((k, cols), dtype=np.float32) * 0.02
        m = DenseMatrix(values.astype(np.float32))
        x = [np.float32(v) for v in np.linspace(-1, 1, cols, dtype=np.float32)]
        best = min(_timed(kernels.matvec, m, x) for _ in range(3))
        total += best * rows / k * count
    return total


def _timed(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def open_engine(nf: Any, engine: str, threads: int = 1) -> Any:
    """The fast model (weights in the mapped file) or the reference model (weights decoded)."""
    if engine == "fast":
        from weightfile.fast.qwen35 import open_model

        return open_model(nf, threads=threads)
    from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer

    return Qwen35Model(*bind_ninfer(nf))


def rss_bound(file_bytes: int, c: Qwen35Config, positions: int, prefill: int) -> dict[str, int]:
    """file + recurrent state (each GDN layer's conv window and delta-rule states) + KV cache
    (float32 K and V of every full-attention layer and position) + ACTIVATION_MULTIPLE × the
    widest [prefill, width] float32 activation."""
    gdn = sum(kind != "full_attention" for kind in c.layer_types)
    full = c.num_hidden_layers - gdn
    state = 0
    if gdn:
        channels = 2 * c.gdn_key_dim + c.gdn_value_dim
        heads = c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim
        state = gdn * ((c.linear_conv_kernel_dim - 1) * channels + heads) * F32
    kv = full * positions * 2 * c.num_key_value_heads * c.head_dim * F32 if full else 0
    ffn = c.moe_intermediate_size if c.num_experts else c.intermediate_size
    widest = max(c.vocab_size, 2 * (ffn or 0), c.hidden_size * 8)
    act = ACTIVATION_MULTIPLE * prefill * widest * F32
    return {"file_bytes": file_bytes, "recurrent_state_bytes": state, "kv_cache_bytes": kv,
            "activation_bytes": act, "total": file_bytes + state + kv + act}  # fmt: skip


def peak_rss_row(path: Any, c: Qwen35Config, file_bytes: int, plan: Plan) -> dict[str, Any]:
    """The fast engine's child-process peak (most threads) against `rss_bound`."""
    tokens = max([*plan.prompts, *plan.gens, 1])
    n = max(plan.threads)
    got = measure_peak_rss(path, "fast", n, tokens)
    bound = rss_bound(file_bytes, c, positions=2 * tokens, prefill=tokens)
    peak, base = int(got["peak_rss_bytes"]), int(got["baseline_rss_bytes"])
    verdict = peak <= base + bound["total"] if bound["total"] >= RSS_NOISE_BYTES else None
    return {"engine": "fast", "threads": n, "peak_rss_bytes": peak, "baseline_rss_bytes": base,
            "bound_bytes": bound["total"], "bound": bound, "within_bound": verdict}  # fmt: skip


def model_section(path: Any, c: Qwen35Config, synthetic: str | None) -> dict[str, Any]:
    moe = bool(c.num_experts)
    files = [Path(path), *Path(path).parent.glob(Path(path).name + ".*")]
    return {
        "path": str(path),
        "synthetic": synthetic,
        "file_bytes": sum(f.stat().st_size for f in files if f.is_file()),
        "family": "qwen35_moe" if moe else "qwen35",
        "geometry": {
            "vocab": c.vocab_size,
            "hidden": c.hidden_size,
            "intermediate": c.moe_intermediate_size if moe else c.intermediate_size,
            "layers": c.num_hidden_layers,
            "heads": c.num_attention_heads,
            "kv_heads": c.num_key_value_heads,
            "head_dim": c.head_dim,
        },
        "encrypted": False,
    }


def test_rows(nf: Any, c: Qwen35Config, plan: Plan, bar: Progress) -> list[measure.BenchRow]:
    """Every pp then tg test at each depth and thread count (`Plan.runs`: at a depth the fill
    leaves the recurrent states and the KV cache as that many tokens do), one fast model per
    thread count."""
    rows = []
    for n in plan.threads:
        model = open_engine(nf, "fast", n)
        for n_prompt, n_gen, n_depth in plan.runs:
            bar.phase(f"fast ×{n} {measure.label_of(n_prompt, n_gen, n_depth)}")
            rows.append(measure.run_row(model, "fast", n, c.vocab_size, n_prompt, n_gen,
                                        plan.repetitions, bar.tick, n_depth))  # fmt: skip
    return rows


def ref_row(nf: Any, c: Qwen35Config, macs: int, shapes: Any, n_gen: int) -> measure.BenchRow:
    """Measured on small models (tg<min(n_gen, REF_GEN)>, once), else estimated per token."""
    if macs <= engines.REF_MEASURE_LIMIT:
        n = min(n_gen, measure.REF_GEN)
        return measure.run_row(open_engine(nf, "ref"), "ref", 1, c.vocab_size, 0, n, 1)
    rate = 1 / estimate_ref_token_seconds(shapes)
    return measure.BenchRow("ref", 1, measure.label_of(0, n_gen), 0, n_gen, "estimated", (rate,))


def run_ninfer_bench(
    path: str | os.PathLike[str],
    *,
    plan: Plan,
    synthetic: str | None = None,
    rss: bool = True,
    ref: bool = True,
    bandwidth_buffer: int,
    progress: bool = False,
) -> dict[str, Any]:
    """Every measurement of the report (the peak RSS in a child); the keys of report.run_bench's
    that apply to `.ninfer` (no checksum, dequantize or matvec rows: null)."""
    from weightfile.ref.ninfer3.read import open_artifact

    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    bar = Progress(plan.timed_runs + int(ref), progress)
    notes: list[str] = []
    try:
        bar.phase("memory bandwidth")
        bw, by_threads = thread_bandwidths(bandwidth_buffer, plan.threads)
        start = time.perf_counter()
        with open_artifact(path) as nf:
            opened = time.perf_counter() - start
            c = bind_config(nf)
            weight_bytes, macs, shapes = per_token(nf, c)
            rows = []
            if ref:
                bar.phase("ref")
                rows.append(ref_row(nf, c, macs, shapes, max(plan.gens, default=measure.REF_GEN)))
                bar.tick()
                notes += [NINFER_ESTIMATED] if rows[-1].method == "estimated" else []
                notes += depth_notes(plan, ref)
            rows += test_rows(nf, c, plan, bar)
        report = _report(path, c, synthetic, started, plan, bw, weight_bytes, opened)
        report["tests"] = [row_dict(r, by_threads, weight_bytes) for r in rows]
        report["decode_speedup"] = speedup_of(report["tests"])
        report["memory_bandwidth"]["by_threads"] = {str(n): v for n, v in by_threads.items()}
        if rss:
            bar.phase("peak RSS (child process)")
            report["peak_rss"] = peak_rss_row(path, c, report["model"]["file_bytes"], plan)
            notes += [RSS_TINY] if report["peak_rss"]["within_bound"] is None else []
    finally:
        bar.close()
    report["notes"] = notes
    return report


def _report(path, c, synthetic, started, plan, bw, weight_bytes, opened) -> dict[str, Any]:
    """The sections that need no forward pass."""
    params = sum(int(np.prod(p.shape)) for p in text_parameters(c.json))
    if c.tie_word_embeddings:  # the head is the embedding's object, counted once
        params -= c.vocab_size * c.hidden_size
    model = model_section(path, c, synthetic) | {"params": params}
    return {
        "schema": SCHEMA,
        "timestamp": started,
        "build": build_section(),
        "machine": machine_section(),
        "model": model,
        "fast_engine": True,
        "repetitions": plan.repetitions,
        "plan": {
            "threads": plan.threads,
            "prompts": plan.prompts,
            "gens": plan.gens,
            "depths": plan.depths,
        },
        "open_seconds": opened,
        "checksum_bytes_per_s": None,
        "checksum_bytes_hashed": None,
        "dequantize": None,
        "matvec": None,
        "image_encode": None,
        "peak_rss": None,
        **bandwidth_section(bw, weight_bytes),
    }
