"""The Qwen3-VL bench (issue 18 item 8): the synthetic VISION files against spec/vqf.md
§worked-example, the image-encode section, its table lines and the generation progress."""

import numpy as np
import pytest
from strategies.vqf_worked_examples import VL_2B_TABLE

from weightfile.bench import engines, report, vision
from weightfile.bench.synthetic import SPECS, planned_layout, synthetic_model, with_progress
from weightfile.bench.table import image_lines
from weightfile.families import vqf_family
from weightfile.fast._native import current_isa
from weightfile.fast.backend import FAST
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory):
    path, _ = synthetic_model("tiny-vl-q8_0", tmp_path_factory.mktemp("vl"))
    return path


def test_vl2b_q4_layout_is_the_worked_example():
    rows, size = planned_layout(SPECS["qwen3-vl-2b-q4_0"])
    assert len(rows) == 41  # spec/vqf.md §worked-example: n = 41 tensors
    # rows 1-18 with their bytes, then v_patch_embed's offset ("from 1,911,447,552")
    assert rows[:18] == VL_2B_TABLE[:18]
    assert rows[18][:2] == VL_2B_TABLE[18][:2]
    sizes = {name: n for name, _, n in rows}
    assert sizes["v_merger_f1w"] == 67_108_864  # the F32 sizes spec/vqf.md §worked-example quotes
    assert sizes["v_ds_f1w"] == 201_326_592
    assert sizes["v_ds_f2w"] == 100_663_296
    assert size == 2_331_316_232  # file_len 2,331,316,224 + 8 FNV


def test_vl2b_q8_file_size_is_the_worked_example():
    rows, size = planned_layout(SPECS["qwen3-vl-2b-q8_0"])
    assert len(rows) == 41
    assert size == 3_191_541_768  # spec/vqf.md §worked-example "same model, wmode q8"


def test_tiny_vl_file_is_valid_and_binds_with_its_tower(tiny_vl):
    assert validate(tiny_vl, checksum=True) == []
    with open_vqf(tiny_vl) as vqf:
        family = vqf_family(vqf)
        assert family.name == "qwen3_vl"
        model = family.reference_model(vqf)  # the binder checks fc2's padded columns are zero
        c = model.vision.config
        assert (c.intermediate_size, c.deepstack_visual_indexes) == (80, (0,))
        assert model.vision.weights.blocks[0].fc2.shape == (64, 96)  # 80 padded to 96
        # the text tests run on the dense decoder: a VL model would refuse a stray image id
        assert engines.text_family(vqf).name == "qwen3"


def test_bench_image_is_784_patches_and_196_tokens():
    arch = {"vis_patch": 16, "vis_merge": 2, "vis_temporal": 2, "vis_max_pos": 2304}
    im = vision.bench_image(arch)
    assert im.grid_thw == (1, 28, 28)  # 448 / 16
    assert im.pixel_values.shape == (784, 3 * 2 * 16 * 16)
    assert im.n_tokens == 196


def test_2b_work_by_hand():
    from weightfile.bench.synthetic import arch_of

    c = vision.tower_config(arch_of(SPECS["qwen3-vl-2b-q4_0"]))
    w = vision.work_of(c, 784)
    # per patch per block: qkv 3·1024², proj 1024², fc1 and fc2 4096·1024 each
    blocks = (3 * 1024 * 1024 + 1024 * 1024 + 2 * 4096 * 1024) * 784 * 24
    patch = 1024 * 1536 * 784
    mergers = (4096 * 4096 + 2048 * 4096) * 196 * (1 + 3)  # the merger and 3 DeepStack mergers
    assert w.linears == blocks + patch + mergers
    assert w.attention == 2 * 784 * 784 * 1024 * 24


def test_ref_estimate_is_near_the_measured_encode(tiny_vl):
    # the estimate counts linears and attention only; on this D = 64 tower the uncounted
    # LayerNorm, GELU and rotary are a large share, so it sits below the measurement
    with open_vqf(tiny_vl) as vqf:
        model = vqf_family(vqf).reference_model(vqf)
        pv = np.random.default_rng(0).standard_normal((4, 1536)).astype(np.float32)
        measured = vision.timed_encode(model, VisionInput(pv, (1, 2, 2)))
        estimated, parts = vision.ref_estimate(vqf, 4)
    assert set(parts) >= set(vision.BLOCK_LINEARS)
    assert 0.25 * measured <= estimated <= 1.5 * measured


def test_fast_asked_without_a_fast_tower_runs_ref_and_says_so(tiny_vl, monkeypatch):
    # as while the family row names no fast model (or it has no vision tower)
    monkeypatch.setattr(vision, "fast_vision_model", lambda v, n: None)
    with open_vqf(tiny_vl) as vqf:
        section, notes = vision.image_section(vqf, FAST, [1, 2], repetitions=1)
    assert (section["engine_asked"], section["engine"]) == ("fast", "ref")
    assert [(r["engine"], r["threads"], r["method"]) for r in section["rows"]] == [
        ("ref", 1, "estimated")
    ]
    assert section["image"] == {"side": 448, "preprocess": "hf", "grid": [1, 28, 28],
                                "patches": 784, "tokens": 196}  # fmt: skip
    assert any("no fast vision tower" in n for n in notes)
    assert vision.RKNN_NOTE in notes
    lin = {m["tensor"]: m for m in section["vision_linears"] if m["engine"] == "ref"}
    assert lin["v_q8_fc2"]["cols"] == 96 and lin["v_q8_fc2"]["flops"] == 2 * 64 * 96 * 784
    assert set(lin["v_q8_qkv"]["gflop_per_s"]) == {"1"}  # the reference is single-threaded
    fast = [m for m in section["vision_linears"] if m["engine"] == "fast"]
    if engines.fast_matrix_from_entry() is not None:  # the C product needs no fast tower
        assert [(m["tensor"], set(m["gflop_per_s"])) for m in fast] == [
            (n, {"1", "2"}) for n in vision.BLOCK_LINEARS
        ]
    lines = dict(image_lines({"image_encode": section}))
    assert lines["image encode (448×448 image, 784 patches → 196 tokens, 1 GFLOP)"] == (
        "engine ref, fast asked"
    )


class FakeTower:
    """Stands in for a fast VL model: only `encode_images` is called."""

    def __init__(self) -> None:
        self.calls = 0

    def encode_images(self, images):
        self.calls += 1
        rows = images[0].pixel_values.shape[0]
        assert images[0].grid_thw == ((1, 28, 28) if rows == 784 else (1, 2, 2))  # or warm-up


def test_a_fast_tower_is_timed_at_every_thread_count(tiny_vl, monkeypatch):
    towers: dict[int, FakeTower] = {}
    monkeypatch.setattr(vision, "fast_vision_model", lambda v, n: towers.setdefault(n, FakeTower()))
    with open_vqf(tiny_vl) as vqf:
        section, _ = report.image_encode(vqf, FAST, [1, 2], repetitions=2)
    assert section["engine"] == "fast"
    assert [(r["engine"], r["threads"], len(r["samples_seconds"])) for r in section["rows"]] == [
        ("fast", 1, 2),
        ("fast", 2, 2),
    ]
    assert {n: t.calls for n, t in towers.items()} == {1: 3, 2: 3}  # a warm-up, then 2 timed
    lin = section["vision_linears"]
    assert [m["tensor"] for m in lin] == list(vision.BLOCK_LINEARS)
    assert all(m["engine"] == "fast" and set(m["gflop_per_s"]) == {"1", "2"} for m in lin)
    assert all(v > 0 for m in lin for v in m["gflop_per_s"].values())
    # the Qwen3.5 tower on the same image (at this tiny tower's own sizes, weightfile/bench/
    # vision35.py), a real fast encode, with its GFLOP/s from the work counted by hand
    q = section["qwen35_vision"]
    assert q["geometry"]["official"] is False and q["geometry"]["hidden"] == 64
    assert q["image"]["patches"] == 784 and q["image"]["tokens"] == 196
    per_patch = (
        3 * 64 * 64 + 64 * 64 + 2 * 80 * 64
    ) * 2  # qkv, proj, fc1, fc2 (unpadded) x 2 blocks
    merger = (256 * 256 + 64 * 256) * 196  # fc1 [4D, 4D], fc2 [text 64, 4D] per merge window
    linears = per_patch * 784 + 64 * 1536 * 784 + merger
    assert q["flops_per_image"]["linears"] == 2 * linears
    assert q["flops_per_image"]["attention"] == 2 * 2 * 784 * 784 * 64 * 2
    assert [r["threads"] for r in q["rows"]] == [1, 2]
    for r in q["rows"]:
        assert r["gflop_per_s"] == pytest.approx(q["flops_per_image"]["total"] / r["seconds"] / 1e9)
    assert all(r["gflop_per_s"] > 0 for r in section["rows"])
    # the bound of its F32 products (fast/csrc/mul_add_peak.c), on the x86 vector paths
    peak = q["mul_add_peak_gflop_per_s"]
    assert (peak or 0) > 0 if current_isa() in ("avx2", "avx512") else peak is None
    lines = dict(image_lines({"image_encode": section}))
    assert any(k.startswith("image encode, Qwen3.5 tower (depth 2, width 64") for k in lines)
    assert any(k.startswith("  bound of its F32 products") for k in lines) == (peak is not None)


def test_the_official_qwen35_geometry_beside_a_real_size_tower():
    from weightfile.bench import vision35
    from weightfile.bench.synthetic import arch_of

    c = vision35.geometry_beside(vision.tower_config(arch_of(SPECS["qwen3-vl-2b-q4_0"])))
    assert c is vision35.QWEN35_VISION and c.head_dim == 72 and c.deepstack_visual_indexes == ()
    w = vision.work_of(c, 784, pad=1)
    # spec/models.md §qwen35-vision: depth 27, width 1152, MLP 4304 (unpadded), merger to 5120
    blocks = (4 * 1152 * 1152 + 2 * 4304 * 1152) * 784 * 27
    assert w.linears == blocks + 1152 * 1536 * 784 + (4608 * 4608 + 5120 * 4608) * 196
    assert w.attention == 2 * 784 * 784 * 1152 * 27


class CountingBar:
    bar = object()  # "a terminal": with_progress wraps the payloads

    def __init__(self) -> None:
        self.done = 0

    def tick(self, n: int = 1) -> None:
        self.done += n


def test_generation_progress_counts_every_payload_byte():
    from weightfile.bench.synthetic import tensor_sources

    sources = tensor_sources(SPECS["tiny-vl-q4_0"])
    bar = CountingBar()
    wrapped = with_progress(sources, bar)
    for t in wrapped:
        if t.data is not None and not isinstance(t.data, bytes):
            for _ in t.data:
                pass
    assert bar.done == sum(t.size for t in sources)


def test_cli_reports_the_image_encode_of_a_vl_model(tmp_path, capsys, monkeypatch):
    import json

    from weightfile.bench import measure
    from weightfile.cli import main

    monkeypatch.setattr(measure, "MIN_SECONDS", 0.0)  # these check the report, not the machine
    monkeypatch.setattr(measure, "REPEATS", 1)
    monkeypatch.setattr(report, "BW_REPEATS", 1)
    args = ["bench", "--synthetic", "tiny-vl-q4_0", "--cache-dir", str(tmp_path), "--json",
            "--engine", "ref", "-p", "0", "-n", "2", "-r", "1", "--threads", "1",
            "--bandwidth-mib", "8", "--no-rss", "--no-ref"]  # fmt: skip
    assert main(args) == 0
    r = json.loads(capsys.readouterr().out)
    im = r["image_encode"]
    assert (im["engine_asked"], im["engine"]) == ("ref", "ref")
    assert im["image"]["tokens"] == 196 and im["rows"][0]["seconds"] > 0
    assert vision.RKNN_NOTE in r["notes"]
    assert [t["test"] for t in r["tests"]] == (["tg2"] if engines.fast_open_model() else [])
