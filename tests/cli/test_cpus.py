"""`--cpus LIST` of `run` and `bench` (weightfile/cpus.py, spec/numerics.md §threads): the cpulist
syntax, the big-core default on a big.LITTLE sysfs, the native.cpus refusals, and the same
tokens and logits pinned to one CPU or two. Runs that pin go to a child process, so this test
process keeps its own affinity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from strategies.tiny_vqf import write_tiny_model

from weightfile import cpus
from weightfile.cli import main
from weightfile.spec.errors import UnsupportedError

#: A child that runs the CLI with every tiny product and attention on the pool (production skips
#: threads below a work size), then prints each of its threads' allowed CPUs.
CHILD = """
import json, os, sys
import weightfile.fast.numerics.matrix as m
m.MIN_ELEMENTS_PER_THREAD = 1
from weightfile.cli import main
rc = main(sys.argv[1:])
tasks = [int(t) for t in os.listdir("/proc/self/task")]
print(json.dumps([sorted(os.sched_getaffinity(t)) for t in tasks]), file=sys.stderr)
sys.exit(rc)
"""


def child(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, env=env, timeout=300
    )


def two_cpus() -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("this process may use only one CPU")
    return allowed[:2]


@pytest.mark.parametrize(
    ("text", "want"),
    [("0", [0]), ("3,1", [1, 3]), ("0-2,5", [0, 1, 2, 5]), ("2-2, 2", [2]), ("0,0-1", [0, 1])],
)
def test_cpulists_parse_as_taskset_reads_them(text: str, want: list[int]) -> None:
    assert cpus.parse_cpu_list(text) == want
    assert cpus.parse_cpu_list(cpus.fmt(want)) == want


@pytest.mark.parametrize("text", ["", "a", "1-", "3-1", "-1", "0,,1", "1.5"])
def test_a_malformed_cpulist_is_native_cpus(text: str) -> None:
    with pytest.raises(UnsupportedError) as e:
        cpus.parse_cpu_list(text)
    assert e.value.rule == "native.cpus"


def fake_sysfs(root: Path, present: str, **per_cpu: list[int]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "present").write_text(present + "\n")
    for name, values in per_cpu.items():
        for c, v in enumerate(values):
            f = root / f"cpu{c}" / name.replace("__", "/")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"{v}\n")
    return root


def test_big_cores_are_the_default_on_big_little(tmp_path: Path) -> None:
    # the RK3588: cpu0-3 Cortex-A55, cpu4-7 Cortex-A76 (the kernel's capacities)
    rk = fake_sysfs(tmp_path / "rk", "0-7", cpu_capacity=[414] * 4 + [1024] * 4)
    assert cpus.big_cores(range(8), rk) == [4, 5, 6, 7]
    assert cpus.big_cores([0, 1, 5], rk) == [5]  # among the allowed ones
    # no cpu_capacity: the cpufreq maximum decides
    freq = [1800000] * 4 + [2400000] * 2 + [2256000] * 2
    f = fake_sysfs(tmp_path / "f", "0-7", cpufreq__cpuinfo_max_freq=freq)
    assert cpus.big_cores(range(8), f) == [4, 5]
    same = fake_sysfs(tmp_path / "s", "0-3", cpu_capacity=[1024] * 4)
    assert cpus.big_cores(range(4), same) is None  # not big.LITTLE: nothing pinned
    assert cpus.big_cores(range(4), tmp_path / "none") is None


def test_a_missing_or_forbidden_cpu_is_native_cpus(monkeypatch, tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, "0-3")
    with pytest.raises(UnsupportedError, match="CPU 4 does not exist") as e:
        cpus.check_cpus([0, 4], root)
    assert e.value.rule == "native.cpus"
    monkeypatch.setattr(cpus, "allowed_cpus", lambda: {0, 1})
    with pytest.raises(UnsupportedError, match="CPU 2 is not allowed") as e:
        cpus.check_cpus([2], root)
    assert e.value.rule == "native.cpus"
    assert cpus.choose("1", root) == [1]


def test_run_and_bench_refuse_a_cpu_that_does_not_exist(tmp_path: Path, capsys) -> None:
    model = write_tiny_model(tmp_path)
    before = os.sched_getaffinity(0)
    args = ["run", str(model), "--engine", "fast", "--token-ids", "5", "--cpus", "100000"]
    assert main(args) != 0
    assert "[native.cpus]" in capsys.readouterr().err
    assert main(["bench", str(model), "--cpus", "0,100000", "-p", "0", "-n", "1"]) != 0
    assert "[native.cpus]" in capsys.readouterr().err
    assert os.sched_getaffinity(0) == before  # refused before anything was pinned


def test_the_same_tokens_and_logits_on_one_cpu_or_two(tmp_path: Path) -> None:
    pair = two_cpus()
    model = write_tiny_model(tmp_path)
    got = {}
    for cpu_list in ([pair[0]], pair):
        out = tmp_path / f"{len(cpu_list)}.npz"
        text = cpus.fmt(cpu_list)
        r = child("run", str(model), "--engine", "fast", "--token-ids", "5,17,3,9,2,11",
                  "--max-tokens", "6", "--cpus", text, "--save-logits", str(out))  # fmt: skip
        assert r.returncode == 0, r.stderr
        # every thread of the child (the C pool's workers too) ran on the pinned CPUs only
        affinities = json.loads(r.stderr.strip().splitlines()[-1])
        assert len(affinities) >= 2 and all(a == cpu_list for a in affinities), affinities
        with np.load(out) as z:
            got[len(cpu_list)] = {k: z[k].tobytes() for k in z.files}
    assert got[1] == got[2] and "decode.tokens" in got[1]


def test_bench_reports_its_cpus_and_threads(tmp_path: Path, capsys, monkeypatch) -> None:
    pair = two_cpus()
    pinned: list[list[int]] = []
    monkeypatch.setattr(cpus, "pin", pinned.append)  # this process keeps its affinity
    argv = ["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(tmp_path), "--cpus",
            cpus.fmt(pair), "-p", "2", "-n", "1", "-r", "1", "--no-rss", "--no-ref", "-q",
            "--bandwidth-mib", "4", "--json"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert pinned == [pair] and report["machine"]["pinned_cpus"] == cpus.fmt(pair)
    assert {t["threads"] for t in report["tests"] if t["engine"] == "fast"} == {2}
