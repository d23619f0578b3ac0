"""The worked examples of spec/vqf.md §worked-example, rebuilt from their geometry (numbers typed
from the spec).

The files are written sparse (all payloads zero, written as holes), so a 2.3 GB and a 17.7 GB
file cost a few kilobytes of disk; the FNV of a zero run is h·prime^n, so writing is instant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strategies.vqf_worked_examples import VL_2B_TABLE

from weightfile.cli import main
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.vqf.inventory import Geometry, inventory
from weightfile.spec.vqf.placement import data_offset_for, file_len_for
from weightfile.spec.vqf.qtypes import QType, tensor_bytes

#: spec/vqf.md §worked-example / §arch-semantics: Qwen3-VL-2B (text and vision geometry, special ids
#: and rope values of spec/vqf.md §arch-semantics).
QWEN3_VL_2B = {
    "dim": 2048, "n_layers": 28, "n_heads": 16, "n_kv_heads": 8, "head_dim": 128,
    "ffn_dim": 6144, "vocab_size": 151936, "max_seq_len": 8192, "rope_theta": 5e6,
    "norm_eps": 1e-6, "bos_id": 151643, "eos_id": 151645, "has_q_norm": 1, "has_mrope": 1,
    "head_dim_full": 128, "has_vision": 1, "vis_depth": 24, "vis_hidden": 1024,
    "vis_heads": 16, "vis_ffn": 4096, "vis_patch": 16, "vis_temporal": 2, "vis_merge": 2,
    "vis_out_dim": 2048, "vis_in_chan": 3, "vis_max_pos": 2304, "vis_ds_count": 3,
    "mrope_n_sec": 3, "vis_ds_idx": [5, 11, 17, 0], "mrope_sections": [24, 20, 20, 0],
    "vision_start_id": 151652, "vision_end_id": 151653, "image_token_id": 151655,
    "video_token_id": 151656,
}  # fmt: skip
#: spec/vqf.md §worked-example: Qwen3-30B-A3B (MoE, q4); flags 0x223 as observed
#: (spec/vqf.md §flags).
QWEN3_30B_A3B = {
    "dim": 2048, "n_layers": 48, "n_heads": 32, "n_kv_heads": 4, "head_dim": 128,
    "ffn_dim": 128 * 768, "vocab_size": 151936, "has_q_norm": 1, "head_dim_full": 128,
    "n_experts": 128, "moe_ffn": 768, "top_k": 8,
}  # fmt: skip
#: Qwen3-VL-8B from its public Hugging Face config (not in the spec); spec/vqf.md §worked-example
#: gives its file size.
QWEN3_VL_8B = {
    **QWEN3_VL_2B, "dim": 4096, "n_layers": 36, "n_heads": 32, "ffn_dim": 12288,
    "vis_depth": 27, "vis_hidden": 1152, "vis_ffn": 4304, "vis_out_dim": 4096,
    "vis_ds_idx": [8, 16, 24, 0],
}  # fmt: skip

VL_2B_BYTES = {"v_merger_f1w": 67_108_864, "v_ds_f1w": 201_326_592, "v_ds_f2w": 100_663_296}


def sparse_model(arch, wmode: str, embed=QType.F16) -> list[TensorSource]:
    g = Geometry.from_arch(arch)
    out = []
    for kind in inventory(arch, wmode):
        qtype = embed if kind.name == "token_embed" else kind.qtypes[0]
        out.append(TensorSource(kind.name, qtype, *kind.directory_shape(g), data=None))
    return out


def planned_file_size(arch, wmode: str) -> tuple[int, int]:
    sizes = [t.size for t in sparse_model(arch, wmode)]
    return len(sizes), file_len_for(data_offset_for(len(sizes)), sizes) + 8


@pytest.fixture(scope="module")
def vl_2b(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("vl2b") / "qwen3-vl-2b-q4.vqf"
    return write_vqf(path, arch=QWEN3_VL_2B, tensors=sparse_model(QWEN3_VL_2B, "q4"), flags=0x063)


def test_qwen3_vl_2b_inspect_json_reproduces_the_article(vl_2b, capsys):
    assert main(["inspect", "--json", str(vl_2b)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["file_bytes"] == 2_331_316_232
    assert d["header"]["file_len"] == 2_331_316_224
    assert d["header"]["data_offset"] == 4096
    assert d["header"]["n_tensors"] == 41
    assert 448 + 41 * 64 == 3072  # dir_end of the example
    by_name = {t["name"]: t for t in d["tensors"]}
    for name, offset, size in VL_2B_TABLE:
        assert by_name[name]["offset"] == offset, name
        if size is not None:
            assert by_name[name]["bytes"] == size, name
    for name, size in VL_2B_BYTES.items():
        assert by_name[name]["bytes"] == size
    assert (by_name["q4_gate"]["rows"], by_name["q4_gate"]["cols"]) == (172032, 2048)
    assert (by_name["v_q8_qkv"]["rows"], by_name["v_q8_qkv"]["cols"]) == (24, 3145728)


def test_qwen3_vl_2b_is_valid_and_sparse(vl_2b):
    assert validate(vl_2b) == []
    assert vl_2b.stat().st_blocks * 512 < 1 << 20


def test_qwen3_30b_a3b_moe_file_size(tmp_path):
    path = write_vqf(
        tmp_path / "qwen3-30b-a3b-q4.vqf",
        arch=QWEN3_30B_A3B,
        tensors=sparse_model(QWEN3_30B_A3B, "q4"),
        flags=0x223,
    )
    assert path.stat().st_size == 17_665_601_544
    with open_vqf(path) as vqf:
        assert vqf.header.version == 3
        assert len(vqf.entries) == 15
        assert vqf.entry("moe_router").rows == 48 * 128
        # spec/vqf.md §text-tensors: expert e's q4 gate bytes start at l·B(ff·d) + e·B(moe_ffn·d);
        # B(768·2048) = 884,736
        assert tensor_bytes(QType.Q4_0, 768 * 2048) == 884_736
    assert validate(path) == []


@pytest.mark.parametrize(
    ("arch", "wmode", "tensors", "size"),
    [
        (QWEN3_VL_2B, "q8", 41, 3_191_541_768),
        (QWEN3_VL_2B, "dual", 49, 4_159_295_496),
        (QWEN3_VL_8B, "q4", 41, 6_601_514_056),
    ],
)
def test_cross_checked_sizes(arch, wmode, tensors, size):
    """spec/vqf.md §worked-example "other cross-checks", from geometry alone."""
    assert planned_file_size(arch, wmode) == (tensors, size)
