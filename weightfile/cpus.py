"""Which CPUs the fast engine runs on: `--cpus LIST` of `bench` and `run` (issue 19 item 4).

The whole process is pinned (every thread it has, and so every thread it starts later: the C
row pool, spec/numerics.md §threads, starts its workers on first use) before the first forward
pass. A CPU that does not exist, or that this process may not use (a cgroup or taskset limit),
is refused with `UnsupportedError` (rule native.cpus) before anything is pinned. On a
big.LITTLE board (cores of different `cpu_capacity`, or else of different cpufreq maximum, as
the RK3588's 4× Cortex-A76 + 4× Cortex-A55) the default is the big cores; elsewhere nothing is
pinned. Results do not depend on it: only which core computes an output changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from weightfile.spec.errors import UnsupportedError

RULE = "native.cpus"
SYSFS = Path("/sys/devices/system/cpu")


def parse_cpu_list(text: str) -> list[int]:
    """The Linux cpulist syntax (taskset -c, /sys/.../present): "0,2-3" -> [0, 2, 3], sorted,
    each once; `UnsupportedError` (native.cpus) for anything else."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise UnsupportedError(
                RULE, f"--cpus {text!r}: expected CPU numbers and ranges such as 0,2-3"
            ) from None
        if first < 0 or last < first:
            raise UnsupportedError(RULE, f"--cpus {text!r}: {part!r} is not a range of CPUs")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def present_cpus(sysfs: Path = SYSFS) -> set[int]:
    """The CPUs this machine has (sysfs `present`; else 0 .. os.cpu_count() - 1)."""
    try:
        return set(parse_cpu_list((sysfs / "present").read_text().strip()))
    except (OSError, UnsupportedError):
        return set(range(os.cpu_count() or 1))


def allowed_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity mask)."""
    return set(os.sched_getaffinity(0))


def _per_cpu(sysfs: Path, cpus: Iterable[int], name: str) -> dict[int, int] | None:
    out = {}
    for c in cpus:
        try:
            out[c] = int((sysfs / f"cpu{c}" / name).read_text().strip())
        except (OSError, ValueError):
            return None
    return out


def big_cores(cpus: Iterable[int], sysfs: Path = SYSFS) -> list[int] | None:
    """Of `cpus`, those of the highest capacity when the cores differ (big.LITTLE), else None.
    Capacity is the scheduler's `cpu_capacity`, or else the cpufreq maximum frequency."""
    cpus = sorted(cpus)
    for name in ("cpu_capacity", "cpufreq/cpuinfo_max_freq"):
        sizes = _per_cpu(sysfs, cpus, name)
        if sizes and len(set(sizes.values())) > 1:
            top = max(sizes.values())
            return [c for c in cpus if sizes[c] == top]
    return None


def check_cpus(cpus: list[int], sysfs: Path = SYSFS) -> list[int]:
    """`cpus` when every one exists and may be used; `UnsupportedError` (native.cpus) naming the
    first that does not."""
    if not cpus:
        raise UnsupportedError(RULE, "--cpus names no CPU")
    present, allowed = present_cpus(sysfs), allowed_cpus()
    for c in cpus:
        if c not in present:
            raise UnsupportedError(
                RULE, f"--cpus: CPU {c} does not exist here (present: {fmt(present)})"
            )
        if c not in allowed:
            raise UnsupportedError(
                RULE, f"--cpus: CPU {c} is not allowed for this process (allowed: {fmt(allowed)})"
            )
    return cpus


def fmt(cpus: Iterable[int]) -> str:
    """A cpulist: [0, 1, 2, 5] -> "0-2,5"."""
    out: list[str] = []
    for c in sorted(cpus):
        if out and out[-1].split("-")[-1] == str(c - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def pin(cpus: list[int]) -> None:
    """Pin every thread of this process to `cpus` (checked first: nothing changes on a refusal);
    threads started afterwards inherit it."""
    check_cpus(cpus)
    try:
        tasks = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tasks = [0]
    for tid in tasks:
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            continue


def choose(text: str | None, sysfs: Path = SYSFS) -> list[int] | None:
    """The CPUs to pin to: --cpus LIST when given, else the big cores of a big.LITTLE machine
    (among those allowed), else None (no pinning)."""
    if text is not None:
        return check_cpus(parse_cpu_list(text), sysfs)
    return big_cores(sorted(allowed_cpus() & present_cpus(sysfs)), sysfs)


def apply(text: str | None) -> list[int] | None:
    """choose() then pin(); the CPUs pinned to, or None."""
    cpus = choose(text)
    if cpus is not None:
        pin(cpus)
    return cpus
