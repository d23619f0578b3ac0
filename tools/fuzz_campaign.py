"""The long fuzz campaign (issue 14 item 6): mutated VQF files and `.ninfer` sets, classified.

    python tools/fuzz_campaign.py --inputs 1000000 --jobs 2 --deadline 02:45 --out fuzz-summary

Input i of a format is mutation `Random(f"{seed}:{format}:{i}")` of seed i mod the number of
seeds (tests/fuzz/mutate.py), so any input is replayed from its index alone (`--only FORMAT:I`).
Every fourth input (`--ref-every`) is decoded with the ref engine too. Each "other" is written to
`--repro-dir` with its traceback. Writes OUT.json and OUT.md (inputs, outcomes, rules seen,
machine, commit, elapsed) and exits 1 if any input is "other".

`--jobs N` runs N workers per format, the formats side by side. The run stops at `--deadline`
(UTC HH:MM, or seconds since the epoch), after `--max-seconds`, or when the process gets SIGTERM
or SIGINT: every shard finishes its current input and the summary is written for the inputs done,
marked partial against the `--inputs` target. Each shard also rewrites OUT.shard-FORMAT-J.json
every 500 inputs, so even a killed run leaves its counts behind.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import multiprocessing
import os
import platform
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fuzz.harness import OUTCOMES, Scratch, Worker, reproducer  # noqa: E402
from fuzz.mutate import load_seeds, mutate  # noqa: E402


def _stopped(opts: dict) -> bool:
    return bool(opts["deadline"] and time.time() > opts["deadline"]) or os.path.exists(
        opts["stop_file"]
    )


def _shard(args: tuple) -> dict:
    fmt, job, jobs, opts = args
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent asks us to stop via the stop file
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    seeds = load_seeds(fmt)
    counts: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    others = []
    scratch = Scratch()
    done = 0
    partial = Path(f"{opts['out']}.shard-{fmt}-{job}.json")

    def dump() -> dict:
        out = {"format": fmt, "done": done, "counts": counts, "rules": rules, "others": others}
        partial.write_text(json.dumps(out) + "\n")
        return out

    try:
        with Worker(opts["mem_mb"], opts["timeout"]) as worker:
            for i in range(job, opts["inputs"], jobs):
                if _stopped(opts):
                    break
                if done % 500 == 0:
                    dump()
                seed = seeds[i % len(seeds)]
                files = mutate(seed, random.Random(f"{opts['seed']}:{fmt}:{i}").randint)
                entry = scratch.write(seed, files)
                r = worker.run(entry, ref=i % opts["ref_every"] == 0, decode=seed.decode)
                counts[r.outcome] += 1
                done += 1
                if r.outcome == "typed":
                    rules[r.detail] += 1
                elif r.outcome in ("other", "timeout", "memory"):
                    path = reproducer(seed, files, Path(opts["repro_dir"]) / f"{fmt}-{i}")
                    (path.parent / "outcome.txt").write_text(f"{r.outcome}\n{r.detail}\n")
                    others.append(
                        {
                            "input": i,
                            "seed": seed.name,
                            "outcome": r.outcome,
                            "detail": r.detail[:2000],
                            "entry": str(path),
                        }
                    )
    finally:
        scratch.close()
    return dump()


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=1_000_000, help="inputs per format")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--formats", default="vqf,ninfer3")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ref-every", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per input")
    ap.add_argument("--mem-mb", type=int, default=1536, help="RLIMIT_AS of the worker")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop early (0: no limit)")
    ap.add_argument("--deadline", default="", help="stop at this UTC time (HH:MM) or epoch")
    ap.add_argument("--out", default="fuzz-summary", help="writes OUT.json and OUT.md")
    ap.add_argument("--repro-dir", default="fuzz-repro")
    a = ap.parse_args(argv)
    start = time.time()
    commit = _commit()  # the code the run starts with, not what HEAD is when it ends
    deadline = start + a.max_seconds if a.max_seconds else 0.0
    if a.deadline:
        deadline = min(filter(None, (deadline, _parse_deadline(a.deadline, start))))
    stop_file = Path(a.out + ".stop")
    stop_file.unlink(missing_ok=True)
    opts = {
        "inputs": a.inputs,
        "seed": a.seed,
        "ref_every": a.ref_every,
        "timeout": a.timeout,
        "mem_mb": a.mem_mb,
        "repro_dir": a.repro_dir,
        "deadline": deadline,
        "stop_file": str(stop_file),
        "out": a.out,
    }
    formats = a.formats.split(",")
    tasks = [(fmt, j, a.jobs, opts) for fmt in formats for j in range(a.jobs)]

    def stop(signum: int, frame: object) -> None:
        stop_file.touch()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with multiprocessing.get_context("spawn").Pool(len(tasks)) as pool:
        pending = pool.map_async(_shard, tasks, chunksize=1)
        while not pending.ready():
            pending.wait(5)
        shards = pending.get()
    stop_file.unlink(missing_ok=True)
    summary: dict = {
        "commit": commit,
        "machine": f"{platform.machine()} {_cpu_model()}, {os.cpu_count()} cpus, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
        "seed": a.seed,
        "target_inputs": a.inputs,
        "partial": any(
            s["done"] < len(range(s_j, a.inputs, a.jobs))
            for s, (_, s_j, _, _) in zip(shards, tasks, strict=True)
        ),
        "started_utc": datetime.datetime.fromtimestamp(start, datetime.UTC).isoformat(
            timespec="seconds"
        ),
        "elapsed_s": round(time.time() - start, 1),
        "formats": {},
    }
    for fmt in formats:
        mine = [s for s in shards if s["format"] == fmt]
        counts = sum((collections.Counter(s["counts"]) for s in mine), collections.Counter())
        rules = sum((collections.Counter(s["rules"]) for s in mine), collections.Counter())
        summary["formats"][fmt] = {
            "seeds": len(load_seeds(fmt)),
            "inputs": sum(s["done"] for s in mine),
            "outcomes": {k: counts.get(k, 0) for k in OUTCOMES},
            "distinct_rules": len(rules),
            "top_rules": dict(rules.most_common(15)),
            "rules": dict(rules.most_common()),
            "findings": [o for s in mine for o in s["others"]],
        }
    Path(a.out + ".json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(a.out + ".md").write_text(_markdown(summary))
    print(_markdown(summary))
    bad = sum(f["outcomes"]["other"] for f in summary["formats"].values())
    return 1 if bad else 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _parse_deadline(text: str, now: float) -> float:
    """HH:MM (UTC, today, or tomorrow if already past) or seconds since the epoch."""
    if ":" not in text:
        return float(text)
    hh, mm = (int(x) for x in text.split(":"))
    today = datetime.datetime.fromtimestamp(now, datetime.UTC)
    when = today.replace(hour=hh, minute=mm, second=0, microsecond=0)
    if when.timestamp() <= now:
        when += datetime.timedelta(days=1)
    return when.timestamp()


def _markdown(s: dict) -> str:
    target = (
        f"partial: stopped before the {s['target_inputs']:,}-input target"
        if s["partial"]
        else f"complete: {s['target_inputs']:,} inputs per format"
    )
    lines = [
        f"Fuzz campaign, commit {s['commit']}, {s['machine']}, seed {s['seed']}, "
        f"started {s['started_utc']}, {s['elapsed_s']} s, {target}",
        "",
        "| format | seeds | inputs | " + " | ".join(OUTCOMES) + " | distinct rules |",
        "|---|---|---|" + "---|" * len(OUTCOMES) + "---|",
    ]
    for fmt, f in s["formats"].items():
        cells = " | ".join(f"{f['outcomes'][k]:,}" for k in OUTCOMES)
        lines.append(
            f"| {fmt} | {f['seeds']} | {f['inputs']:,} | {cells} | {f['distinct_rules']} |"
        )
    for fmt, f in s["formats"].items():
        for o in f["findings"][:20]:
            lines.append(
                f"- {fmt} input {o['input']} ({o['seed']}): {o['outcome']}: "
                f"{o['detail'].splitlines()[0] if o['detail'] else ''} -> {o['entry']}"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
