"""Known engine defects named before they bite (spec/numerics.md §board-defects): which rule a
file's geometry triggers, with the file's numbers, from `verify --engine-defaults` and `inspect`.

Golden values are the fact sheet's: head_dim 72 (the 8B/32B vision towers) loses elements
32..35 and 68..71, head_dim 24 loses 8..11 and 20..23; vis_ffn 4304 is read with stride 4320;
the 2B tower (1024 / 16 heads = 64, vis_ffn 4096) triggers only the image-dependent odd grid.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.ref.vqf.engine_defects import engine_defects, lost_score_elements
from weightfile.spec.vqf.header import VQFHeader, arch_field_offset

MOE_PACK = Path(__file__).resolve().parents[2] / "data" / "kestrel-board-v2" / "moe-a-q8_0-x101"


@pytest.mark.parametrize(
    ("head_dim", "lost"),
    [(72, [(32, 35), (68, 71)]), (24, [(8, 11), (20, 23)]), (64, []), (32, []), (128, [])],
)
def test_the_score_tree_loses_the_fact_sheets_elements(head_dim, lost):
    assert lost_score_elements(head_dim) == lost


def rules(arch: dict, names=()) -> list[str]:
    return [f.rule for f in engine_defects(arch, list(names))]


def test_each_vision_defect_from_the_towers_geometry():
    eight_b = {"has_vision": 1, "vis_hidden": 1152, "vis_heads": 16, "vis_ffn": 4304}
    found = engine_defects(eight_b, [])
    assert [f.rule for f in found] == [
        "vqf.defect.vision_attention_head_dim",
        "vqf.defect.vision_ffn_stride",
        "vqf.defect.vision_odd_grid",
    ]
    assert "elements 32..35, 68..71" in found[0].detail and "4320 apart" in found[1].detail
    assert "for images whose patch grid is odd" in found[2].detail
    two_b = {"has_vision": 1, "vis_hidden": 1024, "vis_heads": 16, "vis_ffn": 4096}
    assert rules(two_b) == ["vqf.defect.vision_odd_grid"]
    assert rules({"has_vision": 0, "vis_hidden": 1152, "vis_heads": 16, "vis_ffn": 4304}) == []


def test_the_moe_defect_needs_q8_experts_and_a_width_or_hidden_off_32():
    assert rules({"n_experts": 8, "moe_ffn": 48, "dim": 64}, ["q8_gate"]) == [
        "vqf.defect.moe_q8_width"
    ]
    assert rules({"n_experts": 8, "moe_ffn": 32, "dim": 80}, ["q8_gate"]) == [
        "vqf.defect.moe_q8_width"
    ]
    assert rules({"n_experts": 8, "moe_ffn": 48, "dim": 64}, ["q4_gate"]) == []
    assert rules({"n_experts": 8, "moe_ffn": 768, "dim": 2048}, ["q8_gate"]) == []


def test_verify_and_inspect_name_the_defects_of_a_vision_file(tmp_path, capsys):
    """The tiny VL file: vis_ffn 80 (stride 96) and the odd-grid note; no head_dim defect."""
    from weightfile.bench.synthetic import synthetic_model

    path, _ = synthetic_model("tiny-vl-q8_0", tmp_path)
    assert main(["verify", "--engine-defaults", str(path)]) == 0  # loads: exit unchanged
    out = capsys.readouterr().out
    assert "engine: defect [vqf.defect.vision_ffn_stride] vis_ffn 80" in out and "96 apart" in out
    assert "engine: defect [vqf.defect.vision_odd_grid]" in out
    assert "vision_attention_head_dim" not in out
    assert main(["inspect", str(path)]) == 0
    assert "engine: defect [vqf.defect.vision_ffn_stride]" in capsys.readouterr().out


def test_verify_names_the_moe_defect_of_a_patched_header(tmp_path, capsys):
    """The MoE pack's file says nothing; the same file with moe_ffn patched to 48 names the
    zero-output defect (and the validator its own violations)."""
    assert main(["verify", "--engine-defaults", str(MOE_PACK / "model.vqf")]) == 0
    assert "defect" not in capsys.readouterr().out
    bad = tmp_path / "moe48.vqf"
    shutil.copyfile(MOE_PACK / "model.vqf", bad)
    with open(bad, "r+b") as f:
        f.seek(arch_field_offset(VQFHeader, "moe_ffn"))
        f.write(struct.pack("<I", 48))
    main(["verify", "--engine-defaults", str(bad)])
    out = capsys.readouterr().out
    assert "engine: defect [vqf.defect.moe_q8_width] Q8_0 experts with moe_ffn 48" in out
