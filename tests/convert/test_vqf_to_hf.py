"""Issue 34 item 13: `convert a.vqf FOLDER` writes a Hugging Face checkpoint transformers loads
(weightfile/families/qwen3/from_vqf.py).

The oracle is transformers itself: `Qwen3ForCausalLM.from_pretrained(FOLDER)` (eager attention,
float32) must give the logits of our reference decoder on the file's dequantized weights
(CANONICAL with f32 weights in the products, as tests/convert/test_qwen3_vqf.py compares an
import), and its state dict must hold every decoded value bit for bit. The folder follows the
output policy: existing files only with --force, never a symlink.
"""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.model_file import open_model_file
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TOKENS = [1, 17, 42, 99, 200, 3]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "qwen3-hf"
    assert main(["convert", str(EXAMPLE_PATH), str(out)]) == 0
    return out


def test_transformers_loads_it_and_gives_our_logits(folder) -> None:
    hf = transformers.Qwen3ForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    with torch.no_grad():
        want = hf(torch.tensor([TOKENS])).logits[0].numpy()
    with open_vqf(EXAMPLE_PATH) as vqf:
        config, weights = bind_vqf(vqf)
    f32w = Qwen3Model(config, weights, CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS))
    got = f32w.forward(TOKENS, f32w.new_cache())
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5  # same weights: only float rounding differs
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    # every tensor is the VQF's decoded value, bit for bit
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    with open_model_file(EXAMPLE_PATH) as f:
        assert np.array_equal(sd["model.layers.1.mlp.down_proj.weight"], f.decode("q4_down")[1])
        assert np.array_equal(sd["model.embed_tokens.weight"], f.decode("token_embed"))
        assert np.array_equal(sd["lm_head.weight"], f.decode("q4_lm"))
        assert np.array_equal(sd["model.layers.0.self_attn.k_norm.weight"], f.decode("k_norm")[0])


def test_the_folder_follows_the_output_policy(folder, tmp_path, capsys) -> None:
    assert main(["convert", str(EXAMPLE_PATH), str(folder)]) == 2  # exists: --force
    assert "vqf.writer.destination" in capsys.readouterr().err
    assert main(["convert", str(EXAMPLE_PATH), str(folder), "--force"]) == 0
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert main(["convert", str(EXAMPLE_PATH), str(link), "--force"]) == 4
    assert "format.file.destination" in capsys.readouterr().err
