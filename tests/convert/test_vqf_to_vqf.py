"""Issue 34 item 13: `convert a.vqf b.vqf` relayouts and requantizes a dense Qwen3 VQF file
(weightfile/families/qwen3/from_vqf.py, spec/vqf.md §converter).

* A relayout copies blocks: the bundled tiled Q4_0 file -> legacy -> tiled gives its bytes back,
  and the legacy file decodes to the same values, bit for bit.
* A change of codec is lossy and needs --requantize (`vqf.import.requantize`, exit 3, nothing
  written); with it, the result is the file the Hugging Face importer writes from the source's
  dequantized weights — a checkpoint this test writes itself with safetensors under the
  transformers names — byte for byte, and it verifies.
* Dequantizing to f32 needs no flag and gives the decoded values exactly; MoE, VISION and
  encrypted sources are refused naming why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.model_file import open_model_file

PROJ = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
        "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
        "down": "mlp.down_proj"}  # fmt: skip
NORM = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
        "q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm"}  # fmt: skip


def values(path: Path) -> dict[str, np.ndarray]:
    with open_model_file(path) as f:
        return {n: f.decode(n, engine="ref") for n in f.names()}


def test_a_relayout_copies_the_blocks(tmp_path, capsys) -> None:
    legacy, back = tmp_path / "legacy.vqf", tmp_path / "back.vqf"
    assert main(["convert", str(EXAMPLE_PATH), str(legacy), "--layout", "legacy"]) == 0
    assert "wmode q4, legacy" in capsys.readouterr().out  # the source's own weight mode
    assert main(["verify", str(legacy)]) == 0
    assert main(["convert", str(legacy), str(back)]) == 0
    assert back.read_bytes() == EXAMPLE_PATH.read_bytes()
    a, b = values(EXAMPLE_PATH), values(legacy)
    assert a.keys() == b.keys()
    for n in a:
        assert a[n].view(np.uint32).tolist() == b[n].view(np.uint32).tolist(), n
    capsys.readouterr()


def hf_folder_of(path: Path, folder: Path) -> Path:
    """The dequantized weights of a dense Qwen3 VQF as a transformers checkpoint, written here
    from `dump`'s values with the safetensors library (not through the converter)."""
    from safetensors.numpy import save_file

    folder.mkdir()
    v = values(path)
    with open_model_file(path) as f:
        a = f.metadata()["arch"]
    sd = {"model.embed_tokens.weight": v["token_embed"], "model.norm.weight": v["final_norm"],
          "lm_head.weight": v["q4_lm"]}  # fmt: skip
    for i in range(a["n_layers"]):
        for short, hf in PROJ.items():
            sd[f"model.layers.{i}.{hf}.weight"] = v[f"q4_{short}"][i]
        for vqf, hf in NORM.items():
            sd[f"model.layers.{i}.{hf}.weight"] = v[vqf][i]
    save_file({k: np.ascontiguousarray(x) for k, x in sd.items()}, folder / "model.safetensors")
    config = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
              "vocab_size": a["vocab_size"], "hidden_size": a["dim"],
              "intermediate_size": a["ffn_dim"], "num_hidden_layers": a["n_layers"],
              "num_attention_heads": a["n_heads"], "num_key_value_heads": a["n_kv_heads"],
              "head_dim": a["head_dim"], "rope_theta": a["rope_theta"],
              "rms_norm_eps": a["norm_eps"], "max_position_embeddings": a["max_seq_len"],
              "bos_token_id": a["bos_id"], "eos_token_id": a["eos_id"],
              "tie_word_embeddings": False}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("wmode", ["q8", "dual", "g256"])
def test_a_requantization_is_the_importers_file_of_the_dequantized_weights(
    wmode, tmp_path, capsys
) -> None:
    out = tmp_path / "out.vqf"
    argv = ["convert", str(EXAMPLE_PATH), str(out), "--wmode", wmode]
    assert main(argv) == 3
    assert "vqf.import.requantize" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--requantize"]) == 0
    assert main(["verify", "--checksum", str(out)]) == 0
    want = tmp_path / "want.vqf"
    hf = hf_folder_of(EXAMPLE_PATH, tmp_path / "hf")
    assert main(["convert", str(hf), str(want), "--wmode", wmode]) == 0
    assert out.read_bytes() == want.read_bytes()
    capsys.readouterr()


def test_dequantizing_to_f32_is_exact_and_needs_no_flag(tmp_path, capsys) -> None:
    out = tmp_path / "f32.vqf"
    assert main(["convert", str(EXAMPLE_PATH), str(out), "--wmode", "f32"]) == 0
    a, b = values(EXAMPLE_PATH), values(out)
    for short in PROJ:
        assert np.array_equal(a[f"q4_{short}"], b[f"q8_{short}"]), short
    assert np.array_equal(a["q4_lm"], b["q8_lm"]) and np.array_equal(
        a["token_embed"], b["token_embed"]
    )
    back = tmp_path / "back.vqf"  # and quantizing those values again gives the file back
    assert main(["convert", str(out), str(back), "--wmode", "q4"]) == 0
    assert back.read_bytes() == EXAMPLE_PATH.read_bytes()
    capsys.readouterr()


def test_sidecars_go_along_and_protected_files_are_refused(tmp_path, capsys) -> None:
    src = tmp_path / "m.vqf"
    shutil.copyfile(EXAMPLE_PATH, src)
    (tmp_path / "m.vqf.tokenizer.json").write_text('{"x": 1}')
    assert main(["convert", str(src), str(tmp_path / "n.vqf"), "--layout", "legacy"]) == 0
    assert (tmp_path / "n.vqf.tokenizer.json").read_text() == '{"x": 1}'
    key = tmp_path / "key.txt"
    key.write_text("pw")
    enc = tmp_path / "enc.vqf"
    assert main(["encrypt", str(src), str(enc), "--passphrase-file", str(key)]) == 0
    capsys.readouterr()
    assert main(["convert", str(enc), str(tmp_path / "o.vqf")]) == 3
    assert "encrypted" in capsys.readouterr().err
