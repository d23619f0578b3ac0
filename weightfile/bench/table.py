"""The bench report as a readable table (the same numbers as `--json`, rounded for reading)."""

from __future__ import annotations

from typing import Any

NA = "n/a (no fast engine)"


def gb(rate: float) -> str:
    return f"{rate / 1e9:.2f} GB/s" if rate >= 1e8 else f"{rate / 1e6:.2f} MB/s"


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def forward_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for f in report["forward"]:
        label = f"{f['engine']} ×{f['threads']}" + (
            " (estimated)" if f["method"] == "estimated" else ""
        )
        if f["open_seconds"] is not None:
            rows.append((f"open model, {label}", f"{f['open_seconds'] * 1e3:.1f} ms"))
        rows.append((f"prefill tokens/s, {label}", f"{f['prefill_tokens_per_s']:.4g}"))
        rows.append((f"decode tokens/s, {label}", f"{f['decode_tokens_per_s']:.4g}"))
    if not report["fast_engine"]:
        rows += [("prefill tokens/s, fast", NA), ("decode tokens/s, fast", NA)]
    speedup = report["decode_speedup"]
    versus = "estimated ref" if report["forward"][0]["method"] == "estimated" else "ref"
    for n, s in (speedup or {}).items():
        rows.append((f"decode speed-up fast ×{n} / {versus}", f"{s:,.1f}×"))
    if speedup is None:
        rows.append(("decode speed-up fast / ref", NA))
    return rows


def matvec_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    if report["matvec"] is None:
        return [("matvec GB/s of weights read", NA)]
    rows = []
    for m in report["matvec"]:
        rates = ", ".join(
            f"×{n} {gb(v)} ({report_fraction(m, n)})" for n, v in m["bytes_per_s"].items()
        )
        rows.append((f"matvec {m['tensor']} [{m['rows']}×{m['cols']}]", rates))
    return rows


def report_fraction(m: dict[str, Any], n: str) -> str:
    return f"{100 * m['single_core_bandwidth_fraction'][n]:.0f}% of 1-core bw"


def rss_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    r = report["peak_rss"]
    if r is None:
        return [("peak RSS", "n/a")]
    b = r["bound"]
    verdict = "within bound" if r["within_bound"] else "OVER bound"
    if r["engine"] == "ref":
        verdict = "the bound is the fast engine's; ref holds decoded words in RAM"
    return [
        (f"peak RSS ({r['engine']} ×{r['threads']}, child process)", mb(r["peak_rss_bytes"])),
        ("  interpreter, NumPy, C kernels before open", mb(r["baseline_rss_bytes"])),
        ("  bound: file + KV cache + activations",
         f"{mb(r['bound_bytes'])} = {mb(b['file_bytes'])} + {mb(b['kv_cache_bytes'])} + "
         f"{mb(b['activation_bytes'])} ({verdict})"),
    ]  # fmt: skip


def machine_line(machine: dict[str, Any]) -> str:
    load = machine["load_average_1min"]
    return machine["description"] + ("" if load is None else f" · load {load:.2f} (1 min)")


def target_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for t in report["targets"]:
        if t["met"] is None:
            rows.append((f"target: {t['target']}", f"n/a (goal ≥ {t['goal']:g})"))
            continue
        verdict = "met" if t["met"] else "NOT met"
        rows.append((f"target: {t['target']}", f"{t['value']:.3g} vs ≥ {t['goal']:.3g}: {verdict}"))
    return rows


def format_report(report: dict[str, Any]) -> str:
    """Two columns: what was measured, and its value."""
    m, bw, roof = report["model"], report["memory_bandwidth"], report["roofline"]
    g = m["geometry"]
    dq = report["dequantize"]
    rows: list[tuple[str, str]] = [
        ("machine", machine_line(report["machine"])),
        ("model", m["synthetic"] or m["path"]),
        ("geometry", f"{g['layers']} layers, hidden {g['hidden']}, ffn {g['intermediate']}, "
                     f"heads {g['heads']}/{g['kv_heads']}×{g['head_dim']}, vocab {g['vocab']}, "
                     f"{m['family']}"),
        ("file size", mb(m["file_bytes"])),
        ("open_vqf (map, header, directory)", f"{report['open_seconds'] * 1e3:.2f} ms"),
        ("checksum (FNV-1a-64, fast)",
         f"{gb(report['checksum_bytes_per_s'])} over {mb(report['checksum_bytes_hashed'])}"),
        (f"dequantize {dq['tensor']} [{dq['rows']}×{dq['cols']}] (fast)", gb(dq["bytes_per_s"])),
        (f"memory read bandwidth ({bw['method']})",
         f"1 core {gb(bw['single_core_bytes_per_s'])}, "
         f"{bw['threads']} cores {gb(bw['all_core_bytes_per_s'])}"),
        *matvec_lines(report),
        *forward_lines(report),
        ("weight bytes per decoded token", mb(roof["weight_bytes_per_token"])),
        ("decode roofline tokens/s",
         f"1 core {roof['single_core_tokens_per_s']:.1f}, "
         f"{bw['threads']} cores {roof['all_core_tokens_per_s']:.1f}"),
        *rss_lines(report),
        *target_lines(report),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)
