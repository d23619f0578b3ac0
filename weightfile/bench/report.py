"""Run every bench measurement on one model and shape the result (schema `weightfile.bench/1`).

JSON schema (stable; fields are only ever added, a removal bumps the version). Rates are per
second; bytes are bytes (not MB); a field is null when its engine is not available.

    schema            "weightfile.bench/1"
    machine           {description, arch, cpus, load_average_1min (null where unknown): on a
                       shared machine every rate below is only as good as this}
    model             {path, synthetic (name or null), file_bytes, family ("q4"/"q8"),
                       geometry {vocab, hidden, intermediate, layers, heads, kv_heads, head_dim},
                       encrypted (ENC: every open authenticates and decrypts, spec/vqf.md §4.2)}
    fast_engine       true when the family's fast model exists (the matvec rows need only
                       weightfile.fast.numerics.matrix.matrix_from_entry)
    open_seconds      open_vqf: map, header, directory (ENC: also the tag check and decryption)
    checksum_bytes_per_s      fast FNV-1a-64 over the covered bytes (spec/vqf.md §3.5)
    checksum_bytes_hashed     all covered bytes; 1 MiB when there is no C compiler (pure Python)
    dequantize        {tensor, rows, cols, bytes_per_s (encoded bytes)}: one layer, fast codec
    memory_bandwidth  {single_core_bytes_per_s, all_core_bytes_per_s, threads, method, buffer_bytes}
    matvec            null | [{tensor, rows, cols, weight_bytes, bytes_per_s {threads: rate},
                               single_core_bandwidth_fraction {threads: rate / single-core bw}}]
    forward           [{engine, threads, prefill_tokens_per_s, decode_tokens_per_s,
                        method ("measured"/"estimated"), prefill_tokens, decode_tokens,
                        open_seconds (binding the model; null when estimated)}]
    decode_speedup    null | {threads: fast decode tokens/s ÷ ref decode tokens/s}
    roofline          {weight_bytes_per_token, single_core_tokens_per_s, all_core_tokens_per_s}
    peak_rss          null | {engine, threads, peak_rss_bytes, baseline_rss_bytes, bound_bytes,
                              bound {file_bytes, kv_cache_bytes, activation_bytes},
                              within_bound (peak ≤ baseline + bound)}
    targets           [{target, value, goal, met}]: the issue's targets that apply to this model
                       (weightfile/bench/targets.py); value and met null when not measured
    notes             [str]: how to read estimated or missing numbers
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

from weightfile.ref.qwen3.bind_vqf import config_from_arch
from weightfile.ref.vqf.read import open_vqf

from . import engines, measure
from .bandwidth import DEFAULT_BUFFER, Bandwidth, measure_bandwidth
from .machine import describe_machine
from .peak_rss import measure_peak_rss, rss_bound
from .roofline import roofline_tokens_per_s, weight_bytes_per_token
from .targets import check_targets

SCHEMA = "weightfile.bench/1"
NO_FAST = "fast forward rows: n/a (no fast engine: the C kernels are unavailable, see the warning)"
NO_FAST_MATRIX = "matvec rows: n/a (no fast engine: the C kernels are unavailable)"
ESTIMATED = (
    "ref estimated: one reference token at this size takes minutes, so its matvec was timed on "
    f"the first {engines.ESTIMATE_ROWS} rows of every matrix and scaled to all rows (norms and "
    "attention, < 1% of the work, not counted); ref prefill = ref decode (token by token)"
)
ENCRYPTED = (
    "encrypted model: open_seconds includes checking the HMAC-SM3 tag over the whole region and "
    "decrypting it into private memory (spec/vqf.md §4.2); the checksum row times FNV-1a-64 over "
    "the stored ciphertext (the file's trailer is the tag); every other row uses the plaintext"
)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return None


def geometry(c: Any) -> dict[str, int]:
    return {
        "vocab": c.vocab_size,
        "hidden": c.hidden_size,
        "intermediate": c.intermediate_size,
        "layers": c.num_hidden_layers,
        "heads": c.num_attention_heads,
        "kv_heads": c.num_key_value_heads,
        "head_dim": c.head_dim,
    }


def machine_section() -> dict[str, Any]:
    return {
        "description": describe_machine(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": load_average(),
    }


def model_section(path: str | os.PathLike[str], vqf: Any, synthetic: str | None) -> dict[str, Any]:
    c = config_from_arch(vqf.header.arch, tied=False)
    return {
        "path": str(path),
        "synthetic": synthetic,
        "file_bytes": Path(path).stat().st_size,
        "family": engines.family_of(vqf),
        "geometry": geometry(c),
        "encrypted": bool(vqf.header.encrypted),
    }


def largest_layer_matrix(shapes: dict[str, tuple[int, int, int]]) -> str:
    """The per-layer matrix with the most elements (the lm_head, read once, is not a layer's)."""
    stacked = {n: rc for n, rc in shapes.items() if rc[2] > 1}
    return max(stacked, key=lambda n: stacked[n][0] * stacked[n][1])


def file_section(vqf: Any, shapes: dict[str, tuple[int, int, int]]) -> dict[str, Any]:
    """The numbers that need no forward engine: checksum and dequantize throughput."""
    name = largest_layer_matrix(shapes)
    rows, cols, _ = shapes[name]
    rate, hashed = measure.checksum_rate(vqf)
    return {
        "checksum_bytes_per_s": rate,
        "checksum_bytes_hashed": hashed,
        "dequantize": {
            "tensor": name,
            "rows": rows,
            "cols": cols,
            "bytes_per_s": measure.dequantize_rate(vqf, name, rows, cols),
        },
    }


def bandwidth_section(bw: Bandwidth, per_token: int) -> dict[str, Any]:
    return {
        "memory_bandwidth": {
            "single_core_bytes_per_s": bw.single_core,
            "all_core_bytes_per_s": bw.all_core,
            "threads": bw.threads,
            "method": bw.method,
            "buffer_bytes": bw.buffer_bytes,
        },
        "roofline": {
            "weight_bytes_per_token": per_token,
            "single_core_tokens_per_s": roofline_tokens_per_s(per_token, bw.single_core),
            "all_core_tokens_per_s": roofline_tokens_per_s(per_token, bw.all_core),
        },
    }


def forward_rates(vqf: Any, threads: list[int], tokens: int) -> list[measure.ForwardRate]:
    """The reference first, then the fast engine at each thread count (when it exists)."""
    vocab = int(vqf.header.arch["vocab_size"])
    rates = [measure.ref_rate(vqf, tokens)]
    for n in threads if engines.fast_open_model() is not None else ():
        opener = functools.partial(engines.open_fast, vqf, n)
        rates.append(measure.forward_rate(opener, "fast", n, vocab, tokens))
    return rates


def run_bench(
    path: str | os.PathLike[str],
    *,
    threads: list[int],
    tokens: int = 8,
    synthetic: str | None = None,
    rss: bool = True,
    bandwidth_buffer: int = DEFAULT_BUFFER,
    passphrase: bytes | None = None,
) -> dict[str, Any]:
    """Every measurement of the report, in one process (the peak RSS in a child).

    An encrypted model needs `passphrase`: it is authenticated and decrypted in memory at every
    open (spec/vqf.md §4.2); without it the run stops with `vqf.enc.no_key` before measuring.
    """
    fast = engines.fast_open_model() is not None
    notes = [] if fast else [NO_FAST]
    if engines.fast_matrix_from_entry() is None:
        notes.append(NO_FAST_MATRIX)
    with open_vqf(path, passphrase=passphrase) as vqf:
        vqf.plaintext_region()  # an ENC model without its passphrase fails here, not midway
        if vqf.header.encrypted:
            notes.append(ENCRYPTED)
    bw = measure_bandwidth(bandwidth_buffer, threads=os.cpu_count())
    with open_vqf(path, passphrase=passphrase) as vqf:
        shapes = engines.matrix_shapes(vqf)
        report: dict[str, Any] = {
            "schema": SCHEMA,
            "machine": machine_section(),
            "model": model_section(path, vqf, synthetic),
            "fast_engine": fast,
            "open_seconds": measure.open_seconds(path, passphrase),
            **file_section(vqf, shapes),
            **bandwidth_section(bw, weight_bytes_per_token(vqf)),
            "matvec": matvec_rows(vqf, shapes, threads, bw.single_core),
        }
        forward = forward_rates(vqf, threads, tokens)
        c = config_from_arch(vqf.header.arch, tied=False)
    if forward[0].method == "estimated":
        notes.append(ESTIMATED)
    report["forward"] = [asdict(f) for f in forward]
    ref = forward[0].decode_tokens_per_s
    speedup = {str(f.threads): f.decode_tokens_per_s / ref for f in forward[1:]}
    report["decode_speedup"] = speedup if fast else None
    report["peak_rss"] = None
    if rss:
        file_bytes = report["model"]["file_bytes"]
        report["peak_rss"] = peak_rss_row(
            path, c, file_bytes, threads, tokens, fast, forward[0], passphrase
        )
        if report["peak_rss"] is None:
            notes.append("peak RSS: n/a (no fast engine, and the reference is too slow here)")
    report["targets"] = check_targets(report)
    report["notes"] = notes
    return report


def matvec_rows(
    vqf: Any, shapes: dict[str, tuple[int, int, int]], threads: list[int], single_bw: float
) -> list[dict[str, Any]] | None:
    rates = measure.matvec_rates(vqf, shapes, threads)
    if rates is None:
        return None
    return [
        {
            "tensor": r.name,
            "rows": r.rows,
            "cols": r.cols,
            "weight_bytes": r.weight_bytes,
            "bytes_per_s": {str(n): v for n, v in r.bytes_per_second.items()},
            "single_core_bandwidth_fraction": {
                str(n): v / single_bw for n, v in r.bytes_per_second.items()
            },
        }
        for r in rates
    ]


def peak_rss_row(
    path: str | os.PathLike[str],
    c: Any,
    file_bytes: int,
    threads: list[int],
    tokens: int,
    fast: bool,
    ref: measure.ForwardRate,
    passphrase: bytes | None = None,
) -> dict[str, Any] | None:
    """The child-process peak against the issue's bound: fast at the most threads, else ref."""
    if not fast and ref.method != "measured":
        return None
    engine, n = ("fast", max(threads)) if fast else ("ref", 1)
    got = measure_peak_rss(path, engine, n, tokens, passphrase)
    bound = rss_bound(file_bytes, c, positions=2 * tokens, prefill=tokens)
    peak, base = int(got["peak_rss_bytes"]), int(got["baseline_rss_bytes"])
    return {
        "engine": engine,
        "threads": n,
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": base,
        "bound_bytes": bound.total,
        "bound": asdict(bound),
        "within_bound": peak <= base + bound.total,
    }
