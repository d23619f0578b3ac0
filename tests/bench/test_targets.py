"""The development targets (benchmarks/targets.py): which apply to which model, and the
arithmetic of each."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "targets.py"
_spec = importlib.util.spec_from_file_location("bench_targets", SCRIPT)
_targets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_targets)
QWEN3_0_6B, check_targets = _targets.QWEN3_0_6B, _targets.check_targets


def report(geometry, family="q4", matvec=None, tests=(), speedup=None):
    return {
        "model": {"family": family, "geometry": geometry},
        "matvec": matvec,
        "tests": list(tests),
        "decode_speedup": speedup,
    }


VL_2B = {**QWEN3_0_6B, "hidden": 2048, "intermediate": 6144}


def down(fraction):
    return [{"rows": 2048, "cols": 6144, "single_core_bandwidth_fraction": {"1": fraction}}]


@pytest.mark.parametrize(("fraction", "met"), [(0.6, True), (0.5, True), (0.49, False)])
def test_matvec_target_at_2048x6144(fraction, met):
    (t, _) = check_targets(report(VL_2B, matvec=down(fraction)))
    assert (t["value"], t["goal"], t["met"]) == (fraction, 0.5, met)


def test_matvec_target_unknown_without_the_fast_matrix_and_absent_elsewhere():
    (t, _) = check_targets(report(VL_2B))
    assert t["target"].startswith("q4_0 matvec") and t["met"] is None and t["value"] is None
    assert not any("matvec" in t["target"] for t in check_targets(report(QWEN3_0_6B)))
    assert not any("matvec" in t["target"] for t in check_targets(report(VL_2B, family="q8")))


def test_llama_cpp_target_only_on_the_0_6b_q4_geometry():
    row = {"engine": "fast", "threads": 1, "method": "measured"}
    fast = [  # a pp row first: the target reads the tg row
        {**row, "n_gen": 0, "avg_tokens_per_s": 99.0},
        {**row, "n_gen": 64, "avg_tokens_per_s": 35.0},
    ]
    targets = check_targets(report(QWEN3_0_6B, tests=fast, speedup={"1": 250.0}))
    by_name = {t["target"]: t for t in targets}
    llama = next(t for name, t in by_name.items() if "llama.cpp" in name)
    assert llama["goal"] == pytest.approx(47 / 1.5)  # 31.33 tokens/s
    assert (llama["value"], llama["met"]) == (35.0, True)
    speedup = next(t for name, t in by_name.items() if "speed-up" in name)
    assert (speedup["value"], speedup["met"]) == (250.0, True)
    assert not any("llama.cpp" in t["target"] for t in check_targets(report(VL_2B)))
    q8 = check_targets(report(QWEN3_0_6B, family="q8"))
    assert not any("llama.cpp" in t["target"] for t in q8)


def test_speedup_target_names_an_estimated_reference():
    ref = [{"engine": "ref", "threads": 1, "method": "estimated", "n_gen": 8}]
    (t,) = check_targets(report(QWEN3_0_6B, family="q8", tests=ref, speedup={"1": 90.0}))
    assert t["target"] == "decode speed-up fast ×1 / estimated ref"
    assert (t["value"], t["met"]) == (90.0, False)


def test_the_moe_target_is_half_the_bytes_read_roofline():
    tests = [{"engine": "fast", "threads": 1, "n_gen": 16, "avg_tokens_per_s": 30.0}]
    report = {"tests": tests, "moe_roofline": {"tokens_per_s": 50.0}}
    [row] = _targets.moe_roofline_target(report)
    assert row["value"] == pytest.approx(0.6) and row["met"] is True
    assert _targets.moe_roofline_target({"tests": tests}) == []
