"""`weightfile bench --plot PNG`: tokens/s of every fast test against the decode roofline, per
thread count.

matplotlib is an optional extra (`pip install 'weightfile[plot]'`): `require_matplotlib` is
asked before the run starts, so a missing library costs one line, not a finished benchmark.
"""

from __future__ import annotations

import os
from typing import Any

MISSING = "--plot needs matplotlib, which is not installed: pip install 'weightfile[plot]'"


def require_matplotlib() -> str | None:
    """None when matplotlib imports, else the one-line message saying how to get it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MISSING
    return None


def plot_report(report: dict[str, Any], path: str | os.PathLike[str], force: bool = False) -> None:
    """One line per test (avg tokens/s with its stddev as error bars) over the thread counts,
    and the tg roofline (bandwidth at that thread count ÷ weight bytes per token), log scale;
    published at `path` by the one output policy (ref/staging.py: --force replaces a file)."""
    import matplotlib

    from weightfile.ref.staging import staged

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    tests = [t for t in report["tests"] if t["engine"] == "fast"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(t["test"] for t in tests):
        rows = sorted((t for t in tests if t["test"] == name), key=lambda t: t["threads"])
        ax.errorbar([t["threads"] for t in rows], [t["avg_tokens_per_s"] for t in rows],
                    yerr=[t["stddev_tokens_per_s"] or 0 for t in rows], marker="o", capsize=3,
                    label=f"fast {name}")  # fmt: skip
    roof = report["roofline"]["weight_bytes_per_token"]
    by = sorted((int(n), v / roof) for n, v in report["memory_bandwidth"]["by_threads"].items())
    ax.plot([n for n, _ in by], [r for _, r in by], "k--", label="decode roofline (tg)")
    ax.set_xticks([n for n, _ in by])
    ax.set_yscale("log")
    ax.set_xlabel("threads")
    ax.set_ylabel("tokens/s")
    m = report["model"]
    ax.set_title(f"{m['synthetic'] or os.path.basename(m['path'])} · {report['timestamp']}",
                 fontsize=9)  # fmt: skip
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with staged(path, force) as out:  # never through a symlink, FIFO or device
        fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
