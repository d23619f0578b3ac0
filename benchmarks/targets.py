"""The development targets of issue 6 ("Targets"), checked against one `weightfile bench --json`
report: `python benchmarks/targets.py report.json`.

Not part of `weightfile bench`'s output (issue 34 item 8): the goals compare with numbers measured
on other machines (llama.cpp's 47 tokens/s), a verdict about the user's hardware it cannot give.

Each target applies only where the issue states it: the matvec target at a Q4_0 2048 × 6144
matrix (Qwen3-VL-2B's down projection), the llama.cpp comparison on the Qwen3-0.6B geometry in
Q4_0, the 100× decode speed-up on any model (the issue names the demo model). A target whose
number is missing (no fast engine) is listed with value null and met null: not yet known.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

#: The issue's llama.cpp decode tokens/s on 1 thread for the Qwen3-0.6B geometry in Q4_0.
LLAMA_CPP_DECODE_1 = 47.0
WITHIN = 1.5  # "within 1.5× of llama.cpp on 1 thread"
QWEN3_0_6B = {"vocab": 151_936, "hidden": 1024, "intermediate": 3072, "layers": 28,
              "heads": 16, "kv_heads": 8, "head_dim": 128}  # fmt: skip


def target(name: str, value: float | None, goal: float) -> dict[str, Any]:
    """One row: met is value ≥ goal, or None when the value is not measured."""
    return {"target": name, "value": value, "goal": goal,
            "met": None if value is None else value >= goal}  # fmt: skip


def fast_decode(report: dict[str, Any], threads: int) -> float | None:
    """The fast engine's first tg test at `threads` (avg tokens/s), None when not run."""
    rows = [t for t in report["tests"]
            if t["engine"] == "fast" and t["threads"] == threads and t["n_gen"]]  # fmt: skip
    return rows[0]["avg_tokens_per_s"] if rows else None


def matvec_target(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Q4_0 matvec at 2048 × 6144 reads weights at ≥ 50% of single-core bandwidth."""
    if report["model"]["family"] != "q4":
        return []
    rows = report["matvec"] or []
    hit = [m for m in rows if (m["rows"], m["cols"]) == (2048, 6144)]
    g = report["model"]["geometry"]
    if not hit and (g["hidden"], g["intermediate"]) != (2048, 6144):
        return []
    value = hit[0]["single_core_bandwidth_fraction"].get("1") if hit else None
    return [target("q4_0 matvec 2048×6144, 1 thread, fraction of 1-core bandwidth", value, 0.5)]


def moe_roofline_target(report: dict[str, Any]) -> list[dict[str, Any]]:
    """An MoE model decodes at ≥ 50% of the roofline of the bytes its decoded tokens actually
    read (issue 17; weightfile/bench/moe_bytes.py), on 1 thread; only when the report has that
    roofline (`moe_roofline` with its single-core `tokens_per_s`)."""
    roof = report.get("moe_roofline")
    if not roof:
        return []
    decode = fast_decode(report, 1)
    value = None if decode is None else decode / roof["tokens_per_s"]
    return [target("MoE decode fast ×1, fraction of the bytes-read roofline", value, 0.5)]


def check_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target that applies to this report's model."""
    out = matvec_target(report) + moe_roofline_target(report)
    speedup = report["decode_speedup"]
    value = speedup.get("1") if speedup else None
    estimated = any(t["engine"] == "ref" and t["method"] == "estimated" for t in report["tests"])
    versus = "estimated ref" if estimated else "ref"
    out.append(target(f"decode speed-up fast ×1 / {versus}", value, 100.0))
    if report["model"]["family"] == "q4" and report["model"]["geometry"] == QWEN3_0_6B:
        goal = LLAMA_CPP_DECODE_1 / WITHIN
        out.append(target("decode tokens/s fast ×1 (llama.cpp 47 ÷ 1.5)", fast_decode(report, 1),
                          goal))  # fmt: skip
    return out


def lines(targets: list[dict[str, Any]]) -> list[str]:
    """One line per target: its value against its goal, met or NOT met (n/a when not measured)."""
    out = []
    for t in targets:
        if t["met"] is None:
            out.append(f"target: {t['target']}: n/a (goal ≥ {t['goal']:g})")
            continue
        verdict = "met" if t["met"] else "NOT met"
        out.append(f"target: {t['target']}: {t['value']:.3g} vs ≥ {t['goal']:.3g}: {verdict}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the output of weightfile bench --json")
    args = parser.parse_args()
    print("\n".join(lines(check_targets(json.loads(args.report.read_text(encoding="utf-8"))))))


if __name__ == "__main__":
    main()
