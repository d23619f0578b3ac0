"""Name the machine a benchmark ran on (ratios are only comparable inside one run).

x86 kernels list a "model name"; arm64 kernels list one "CPU part" per core instead, so an
RK3588 is named by counting its cores per part ("4× Cortex-A55 + 4× Cortex-A76"), and by the
board's device-tree model where the kernel exposes one.
"""

from __future__ import annotations

import os
import platform
from collections import Counter
from pathlib import Path

#: Arm Ltd. (implementer 0x41) part numbers of the cores a board is likely to have.
ARM_PARTS = {
    "0xd03": "Cortex-A53", "0xd04": "Cortex-A35", "0xd05": "Cortex-A55", "0xd07": "Cortex-A57",
    "0xd08": "Cortex-A72", "0xd09": "Cortex-A73", "0xd0a": "Cortex-A75", "0xd0b": "Cortex-A76",
    "0xd0c": "Neoverse-N1", "0xd0d": "Cortex-A77", "0xd41": "Cortex-A78", "0xd44": "Cortex-X1",
}  # fmt: skip


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU's name from /proc/cpuinfo text: model name, else cores counted per part."""
    fields = [line.split(":", 1) for line in cpuinfo.splitlines() if ":" in line]
    pairs = [(k.strip().lower(), v.strip()) for k, v in fields]
    names = [v for k, v in pairs if k == "model name"]
    if names:
        return names[0]
    parts = Counter(ARM_PARTS.get(v.lower(), f"part {v}") for k, v in pairs if k == "cpu part")
    if parts:
        return " + ".join(f"{n}× {name}" for name, n in parts.items())
    hardware = [v for k, v in pairs if k == "hardware"]
    return hardware[0] if hardware else None


def board_model() -> str | None:
    """The device-tree model (e.g. the board's name on an RK3588), where there is one."""
    try:
        return Path("/proc/device-tree/model").read_text(errors="replace").strip("\0\n ") or None
    except OSError:
        return None


def describe_machine() -> str:
    try:
        model = cpu_model(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        model = None
    parts = [platform.machine(), board_model(), model or platform.processor() or None]
    parts += [f"{os.cpu_count()} cpus", f"Python {platform.python_version()}"]
    return " · ".join(p for p in parts if p)
