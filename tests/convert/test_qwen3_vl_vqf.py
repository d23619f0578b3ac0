"""`weightfile import` of a Qwen3-VL checkpoint (weightfile/families/qwen3_vl/to_vqf.py): a
VISION VQF the strict validator accepts and the binder reads back; the 2B geometry's vision sizes of
spec/vqf.md §worked-example; the refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from strategies.qwen3_vl import IMAGE_ID, shared_checkpoint

from weightfile.cli import main
from weightfile.families.qwen3_vl.to_vqf import text_config, vision_arch, vision_directory
from weightfile.ref.qwen3_vl.bind_vqf import bind_vl_vqf
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.errors import InvalidError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType, tensor_bytes


@pytest.fixture(scope="module")
def checkpoint():
    return shared_checkpoint()


@pytest.mark.parametrize(
    ("qtype", "layout", "family"),
    [("q4_0", "legacy", "q4"), ("q8_0", "tiled", "q8")],
)
def test_import_writes_a_valid_vision_file(checkpoint, tmp_path, capsys, qtype, layout, family):
    out = tmp_path / "m.vqf"
    assert main(["import", str(checkpoint), str(out), "--qtype", qtype, "--layout", layout]) == 0
    assert validate(out, checksum=True) == []
    with open_vqf(out) as f:
        assert f.header.flags & VQFFlag.VISION
        a = f.header.arch
        assert (a["has_vision"], a["vis_depth"], a["vis_hidden"], a["vis_ffn"]) == (1, 3, 32, 48)
        assert a["vis_ds_count"] == 2 and list(a["vis_ds_idx"]) == [0, 2, 0, 0]
        assert (a["has_mrope"], a["mrope_n_sec"], list(a["mrope_sections"])) == (1, 3, [4, 2, 2, 0])
        assert a["image_token_id"] == IMAGE_ID
        q = {e.name: e.qtype for e in f.entries}
        assert all(q[n] == QType.Q8_0 for n in ("v_q8_qkv", "v_q8_proj", "v_q8_fc1", "v_q8_fc2"))
        assert sum(n.startswith("v_") for n in q) == 27 and f"{family}_q" in q
        tc, _, vc, vw, ids = bind_vl_vqf(f)
    assert vw.blocks[0].fc2.shape == (32, 64)  # vis_ffn 48 padded to 64 columns, zeros checked
    assert np.all(vw.blocks[0].fc2.codes[:, 48:] == 0)
    assert (vc.deepstack_visual_indexes, ids.image) == ((0, 2), IMAGE_ID)
    assert tc.mrope_section == (4, 2, 2)


def qwen3_vl_2b_config() -> dict:
    """The Qwen3-VL-2B geometry of spec/vqf.md §worked-example as a config.json would state it."""
    return {
        "model_type": "qwen3_vl",
        "architectures": ["Qwen3VLForConditionalGeneration"],
        "tie_word_embeddings": True,
        "text_config": {
            "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
            "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
            "head_dim": 128,
            "rope_parameters": {"rope_theta": 5000000, "mrope_section": [24, 20, 20]},
        },
        "vision_config": {
            "depth": 24, "hidden_size": 1024, "num_heads": 16, "intermediate_size": 4096,
            "patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2,
            "out_hidden_size": 2048, "num_position_embeddings": 2304,
            "deepstack_visual_indexes": [5, 11, 17], "hidden_act": "gelu_pytorch_tanh",
        },
    }  # fmt: skip


def test_2b_vision_sizes_reproduce_the_worked_example() -> None:
    """spec/vqf.md §worked-example: the vision tensors start at 1,590,583,296 and end at file_len
    2,331,316,224; the block matrices and the large F32 ones have the listed sizes."""
    cfg = qwen3_vl_2b_config()
    _, c = text_config(cfg)
    arch = vision_arch(cfg, c)
    sizes = {n: tensor_bytes(q, r * k) for n, q, r, k in vision_directory(arch)}
    assert len(sizes) == 27
    assert sizes["v_q8_qkv"] == 80_216_064 and sizes["v_q8_proj"] == 26_738_688
    assert sizes["v_q8_fc1"] == sizes["v_q8_fc2"] == 106_954_752
    assert sizes["v_merger_f1w"] == 67_108_864 and sizes["v_ds_f1w"] == 201_326_592
    assert sizes["v_ds_f2w"] == 100_663_296
    assert all(s % 64 == 0 for s in sizes.values())  # no inter-tensor padding
    # (spec/vqf.md §worked-example)
    assert sum(sizes.values()) == 2_331_316_224 - 1_590_583_296


def test_refusals(tmp_path) -> None:
    cfg = qwen3_vl_2b_config()
    cfg["vision_config"]["hidden_act"] = "gelu"
    _, c = text_config(cfg)
    with pytest.raises(InvalidError) as e:
        vision_arch(cfg, c)
    assert e.value.rule == "vqf.import.config"
    cfg = qwen3_vl_2b_config()
    cfg["vision_config"]["deepstack_visual_indexes"] = [1, 2, 3, 4, 5]
    with pytest.raises(InvalidError) as e:
        vision_arch(cfg, c)
    assert e.value.rule == "vqf.import.config"
    folder = tmp_path / "hf"
    folder.mkdir()
    del cfg["text_config"]
    (folder / "config.json").write_text(json.dumps(cfg))
    assert main(["import", str(folder), str(tmp_path / "x.vqf"), "--qtype", "q8_0"]) == 1
    assert not (tmp_path / "x.vqf").exists()
