"""The bench report as a readable table (the same numbers as `--json`, rounded for reading);
the tables are drawn by the CLI's one table printer (weightfile/_table.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from weightfile._table import markdown, two_columns

NA = "n/a (no fast engine)"
NO_DEPTH_0 = "n/a (no fast tg row at depth 0, where the ref row is)"


def gb(rate: float) -> str:
    return f"{rate / 1e9:.2f} GB/s" if rate >= 1e8 else f"{rate / 1e6:.2f} MB/s"


def mb(n: float) -> str:
    """MB, or kB below 0.1 MB: a tiny model's 0.0 MB reads as nothing at all."""
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} kB"


def speedup_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    speedup = report["decode_speedup"]
    refs = [t for t in report["tests"] if t["engine"] == "ref"]
    if not refs:
        return []
    ref = refs[0]
    versus = f"{'estimated ' if ref['method'] == 'estimated' else ''}ref {ref['test']}"
    rows = [(f"decode tokens/s, {versus}", f"{ref['avg_tokens_per_s']:.4g}")]
    for n, s in (speedup or {}).items():
        rows.append((f"decode speed-up fast ×{n} / {versus}", f"{s:,.1f}×"))
    if speedup is None:
        fast_tg = any(t["engine"] == "fast" and t["n_gen"] for t in report["tests"])
        rows.append(("decode speed-up fast / ref", NO_DEPTH_0 if fast_tg else NA))
    return rows


def matvec_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    if report["matvec"] is None:  # a `.ninfer` report has no matvec rows
        return [] if report.get("fast_engine") else [("matvec GB/s of weights read", NA)]
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
    if r["within_bound"] is None:
        verdict = "no verdict: below the interpreter's own noise, see the note"
    elif r["engine"] == "ref":
        verdict = "the bound is the fast engine's; ref holds decoded words in RAM"
    state = (
        "recurrent_state_bytes" in b
    )  # a Qwen3.5 model's GDN states (weightfile/bench/ninfer.py)
    return [
        (f"peak RSS ({r['engine']} ×{r['threads']}, child process)", mb(r["peak_rss_bytes"])),
        ("  interpreter, NumPy, C kernels before open", mb(r["baseline_rss_bytes"])),
        (f"  bound: file + {'recurrent state + ' if state else ''}KV cache + activations",
         f"{mb(r['bound_bytes'])} = {mb(b['file_bytes'])} + "
         f"{mb(b['recurrent_state_bytes']) + ' + ' if state else ''}{mb(b['kv_cache_bytes'])} + "
         f"{mb(b['activation_bytes'])} ({verdict})"),
    ]  # fmt: skip


def seconds(t: float) -> str:
    return f"{t:,.0f} s" if t >= 1000 else f"{t:.3g} s"


def image_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """A Qwen3-VL file's image encode (weightfile/bench/vision.py): seconds per engine and thread
    count, then the vision linears' GFLOP/s; nothing for a text-only file."""
    im = report.get("image_encode")
    if im is None:
        return []
    i = im["image"]
    what = (f"{i['side']}×{i['side']} image, {i['patches']} patches → {i['tokens']} tokens, "
            f"{im['flops_per_image']['total'] / 1e9:,.0f} GFLOP")  # fmt: skip
    asked = "" if im["engine"] == im["engine_asked"] else f", {im['engine_asked']} asked"
    rows = [(f"image encode ({what})", f"engine {im['engine']}{asked}")]
    for r in im["rows"]:
        method = " (estimated)" if r["method"] == "estimated" else ""
        rate = f", {r['gflop_per_s']:.3g} GFLOP/s" if "gflop_per_s" in r else ""
        rows.append((f"  {engine_text(r)} ×{r['threads']}",
                     f"{seconds(r['seconds'])}{rate}{method}"))  # fmt: skip
    rows += board_image_lines(im.get("board"))
    rows += qwen35_lines(im.get("qwen35_vision"))
    for m in im["vision_linears"] or []:
        rates = ", ".join(f"×{n} {v:.3g} GFLOP/s" for n, v in m["gflop_per_s"].items())
        method = " (estimated)" if m["method"] == "estimated" else ""
        rows.append((f"vision {m['tensor']} [{m['rows']}×{m['cols']}] × {m['patches']} patches, "
                     f"{m['engine']}", rates + method))  # fmt: skip
    if im["vision_linears"] is None:
        rows.append(("vision linears GFLOP/s", NA))
    return rows


def engine_text(row: dict[str, Any]) -> str:
    """A row's engine, with its numerics profile when that is not the canonical one."""
    profile = row.get("profile", "canonical")
    return row["engine"] if profile == "canonical" else f"{row['engine']} {profile}"


def board_image_lines(board: dict[str, Any] | None) -> list[tuple[str, str]]:
    """--profile kestrel-board: the engine-preprocessed image and board ÷ canonical seconds."""
    if board is None:
        return []
    i = board["image"]
    h, w = i["pixels_hw"]
    ratio = ", ".join(f"×{n} {v:.3g}" for n, v in (board["encode_ratio"] or {}).items())
    return [(f"  kestrel-board image ({h}×{w} after the engine's preprocessing, "
             f"{i['patches']} patches → {i['tokens']} tokens)",
             f"board ÷ canonical seconds: {ratio or 'n/a'}")]  # fmt: skip


def board_decode_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """--profile kestrel-board: the board's tg t/s ÷ the canonical fast tg t/s per thread count."""
    if "board_decode_ratio" not in report:
        return []
    ratio = report["board_decode_ratio"]
    value = ", ".join(f"×{n} {v:.3g}" for n, v in (ratio or {}).items())
    return [("decode t/s, kestrel-board ÷ canonical fast", value or "n/a (no tg rows)")]


def qwen35_lines(q: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The Qwen3.5 tower's encode of the same image (weightfile/bench/vision35.py)."""
    if q is None:
        return []
    g = q["geometry"]
    what = (f"{'official ' if g['official'] else ''}depth {g['depth']}, width {g['hidden']}, "
            f"MLP {g['intermediate']}, {g['heads']}×{g['head_dim']}, "
            f"{q['flops_per_image']['total'] / 1e9:,.0f} GFLOP")  # fmt: skip
    out = [(f"image encode, Qwen3.5 tower ({what})", "engine fast")]
    for r in q["rows"]:
        out.append((f"  fast ×{r['threads']}",
                    f"{seconds(r['seconds'])}, {r['gflop_per_s']:.3g} GFLOP/s"))  # fmt: skip
    peak = q.get("mul_add_peak_gflop_per_s")
    if peak is not None:
        bound = "  bound of its F32 products, 1 thread (mul + add peak)"
        out.append((bound, f"{peak:.3g} GFLOP/s"))
    return out


def machine_line(machine: dict[str, Any]) -> str:
    load = machine["load_average_1min"]
    pinned = machine.get("pinned_cpus")
    cpus = "" if pinned is None else f" · pinned to cpus {pinned}"
    return machine["description"] + cpus + ("" if load is None else f" · load {load:.2f} (1 min)")


def bandwidth_value(bw: dict[str, Any]) -> str:
    by = bw["by_threads"]
    return ", ".join(f"{n} thread{'s' if n != '1' else ''} {gb(v)}" for n, v in by.items())


def file_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The checksum and dequantize rows (a `.ninfer` report has neither: none)."""
    dq, rows = report["dequantize"], []
    if report["checksum_bytes_per_s"] is not None:
        rows.append(("checksum (FNV-1a-64, fast)", f"{gb(report['checksum_bytes_per_s'])} over "
                     f"{mb(report['checksum_bytes_hashed'])}"))  # fmt: skip
    if dq is not None:
        rows.append((f"dequantize {dq['tensor']} [{dq['rows']}×{dq['cols']}] (fast)",
                     gb(dq["bytes_per_s"])))  # fmt: skip
    return rows


def summary_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """Two columns: what was measured (besides the test rows), and its value."""
    m, bw, roof = report["model"], report["memory_bandwidth"], report["roofline"]
    g = m["geometry"]
    rows: list[tuple[str, str]] = [
        ("machine", machine_line(report["machine"])),
        ("model", m["synthetic"] or m["path"]),
        ("geometry", f"{g['layers']} layers, hidden {g['hidden']}, ffn {g['intermediate']}, "
                     f"heads {g['heads']}/{g['kv_heads']}×{g['head_dim']}, vocab {g['vocab']}, "
                     f"{m['family']}"),
        ("file size", mb(m["file_bytes"])),
        (f"open_{'ninfer' if m['family'].startswith('qwen35') else 'vqf'} (map, header, "
         "directory)", f"{report['open_seconds'] * 1e3:.2f} ms"),
        *file_lines(report),
        (f"memory read bandwidth ({bw['method']})", bandwidth_value(bw)),
        *matvec_lines(report),
        *speedup_lines(report),
        *board_decode_lines(report),
        *image_lines(report),
        ("weight bytes per decoded token", mb(roof["weight_bytes_per_token"])),
        ("decode roofline tokens/s",
         f"1 core {roof['single_core_tokens_per_s']:.1f}, "
         f"{bw['threads']} cores {roof['all_core_tokens_per_s']:.1f}"),
        *rss_lines(report),
    ]  # fmt: skip
    return rows


def format_report(report: dict[str, Any]) -> str:
    """The summary as two aligned columns, then the notes (the pre-/2 table, still used by the
    md output's second part)."""
    lines = two_columns(summary_rows(report))
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)


# -- llama-bench's output formats: one row per test ----------------------------------------------
#: Columns of the csv and jsonl rows, in llama-bench's spirit (build, model, test, t/s) plus the
#: roofline columns llama-bench lacks; n_depth (llama-bench's -d) last, as columns are only added
#: at the end. Rates are tokens per second; sizes are bytes.
ROW_FIELDS = (
    "build_commit", "build_version", "timestamp", "cpu_info", "model", "model_path",
    "model_type", "model_size", "model_n_params", "engine", "method", "n_threads", "test",
    "n_prompt", "n_gen", "repetitions", "avg_ts", "stddev_ts", "samples_ts",
    "bandwidth_bytes_per_s", "roofline_ts", "roofline_fraction", "profile", "n_depth",
)  # fmt: skip


def flat_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every test row with the run's build, machine and model columns repeated (csv, jsonl)."""
    m, b = report["model"], report["build"]
    by_threads = report["memory_bandwidth"]["by_threads"]
    out = []
    for t in report["tests"]:
        out.append({
            "build_commit": b["commit"], "build_version": b["version"],
            "timestamp": report["timestamp"], "cpu_info": report["machine"]["description"],
            "model": m["synthetic"] or Path(m["path"]).name, "model_path": m["path"],
            "model_type": m["family"], "model_size": m["file_bytes"],
            "model_n_params": m["params"], "engine": t["engine"], "method": t["method"],
            "n_threads": t["threads"], "test": t["test"], "n_prompt": t["n_prompt"],
            "n_gen": t["n_gen"], "repetitions": t["repetitions"],
            "avg_ts": t["avg_tokens_per_s"], "stddev_ts": t["stddev_tokens_per_s"],
            "samples_ts": t["samples_tokens_per_s"],
            "bandwidth_bytes_per_s": by_threads.get(str(t["threads"])),
            "roofline_ts": t["roofline_tokens_per_s"], "roofline_fraction": t["roofline_fraction"],
            "profile": t.get("profile", "canonical"), "n_depth": t.get("n_depth", 0),
        })  # fmt: skip
    return out


def format_csv(report: dict[str, Any]) -> str:
    """A header line, then one line per test; samples joined by ';', null as an empty field."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=ROW_FIELDS, lineterminator="\n")
    w.writeheader()
    for row in flat_rows(report):
        row["samples_ts"] = ";".join(repr(v) for v in row["samples_ts"])
        w.writerow({k: "" if v is None else v for k, v in row.items()})
    return buf.getvalue().rstrip("\n")


def format_jsonl(report: dict[str, Any], schema: str) -> str:
    """One JSON object per test, each tagged with the report's schema."""
    return "\n".join(json.dumps({"schema": schema, **row}) for row in flat_rows(report))


def size_text(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def params_text(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.2f} M"


def rate_text(t: dict[str, Any]) -> str:
    avg, sd = t["avg_tokens_per_s"], t["stddev_tokens_per_s"]
    text = f"{avg:.2f}" if avg >= 1 else f"{avg:.3g}"  # the estimated ref: 0.00 says nothing
    text += "" if sd is None else f" ± {sd:.2f}"
    return text + (" (estimated)" if t["method"] == "estimated" else "")


def format_md(report: dict[str, Any]) -> str:
    """llama-bench's markdown table of the tests (with the roofline columns), the summary of
    every other measurement as a second table, the notes, and the build line."""
    m, b = report["model"], report["build"]
    name = m["synthetic"] or Path(m["path"]).name
    header = ["model", "size", "params", "engine", "threads", "test", "t/s", "roofline t/s",
              "of roofline"]  # fmt: skip
    rows = []
    for t in report["tests"]:
        roof, frac = t["roofline_tokens_per_s"], t["roofline_fraction"]
        rows.append([name, size_text(m["file_bytes"]), params_text(m["params"]), engine_text(t),
                     str(t["threads"]), t["test"], rate_text(t),
                     "" if roof is None else f"{roof:.2f}",
                     "" if frac is None else f"{100 * frac:.1f}%"])  # fmt: skip
    lines = markdown(header, rows, right={1, 2, 4, 5, 6, 7, 8}) if rows else ["(no test rows)"]
    summary = [[k, v.replace("|", "/")] for k, v in summary_rows(report)]
    lines += ["", *markdown(["measurement", "value"], summary, right=set())]
    lines += [""] + [f"note: {n}" for n in report["notes"]] if report["notes"] else []
    lines += ["", f"build: {b['commit'] or 'unknown'} ({b['version'] or 'source tree'}) · "
                  f"{report['timestamp']}"]  # fmt: skip
    return "\n".join(lines)
