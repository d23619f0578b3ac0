"""Name the machine a benchmark ran on (ratios are only comparable inside one run)."""

from __future__ import annotations

import os
import platform


def describe_machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu part")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    python = platform.python_version()
    return f"{platform.machine()} · {model} · {os.cpu_count()} cpus · Python {python}"
