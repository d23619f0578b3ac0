"""`weightfile convert` between version-3 (Qwen3-MoE) VQF and llama.cpp qwen3moe GGUF
(spec/vqf.md §converter): a Hugging Face Qwen3-MoE checkpoint imported, exported to GGUF and
converted back gives the imported file's bytes again (every block copied, tiled as the Hugging Face
importer tiles it), and a GGUF expert tensor of another block type needs --requantize.

Golden values: the Hugging Face importer's own file (weightfile/families/qwen3_moe/to_vqf.py, tied
to transformers by tests/convert/test_qwen3_moe_vqf.py) and gguf.quants' decoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from strategies.qwen3_moe_checkpoint import build_model, save

from weightfile.cli import main
from weightfile.ref.codecs.vqf import codec
from weightfile.ref.vqf.encode import encode
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.vqf.qtypes import QType

gguf = pytest.importorskip("gguf", reason="GGUF conversion needs gguf-py")
pytest.importorskip("transformers", reason="the MoE checkpoint needs transformers")


@pytest.fixture(scope="module")
def hf_moe(tmp_path_factory) -> Path:
    return save(build_model(), tmp_path_factory.mktemp("hf_moe"))


@pytest.mark.parametrize(("wmode", "layout"), [("q8", "tiled"), ("q4", "tiled"), ("q8", "legacy")])
def test_moe_vqf_to_gguf_to_vqf_gives_the_imported_file_back(hf_moe, tmp_path, wmode, layout):
    first, back, mid = tmp_path / "a.vqf", tmp_path / "b.vqf", tmp_path / "m.gguf"
    opts = ["--wmode", wmode, "--layout", layout, "--quiet"]
    assert main(["convert", str(hf_moe), str(first), *opts]) == 0
    assert main(["convert", str(first), str(mid), "--quiet"]) == 0
    assert main(["convert", str(mid), str(back), *opts]) == 0
    assert back.read_bytes() == first.read_bytes()


def test_a_moe_gguf_expert_of_another_type_needs_requantize(hf_moe, tmp_path, capsys):
    first, mid, out = tmp_path / "a.vqf", tmp_path / "m.gguf", tmp_path / "o.vqf"
    assert main(["convert", str(hf_moe), str(first), "--wmode", "q8", "--quiet"]) == 0
    assert main(["convert", str(first), str(mid), "--quiet"]) == 0
    # a q4 target from Q8_0 experts: not a copy
    argv = ["convert", str(mid), str(out), "--wmode", "q4", "--layout", "legacy", "--quiet"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "vqf.import.requantize" in err and "is Q8_0" in err and not out.exists()
    assert main([*argv, "--requantize"]) == 0
    r = gguf.GGUFReader(str(mid))
    t = next(t for t in r.tensors if t.name == "blk.0.ffn_gate_exps.weight")
    want = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)  # [E, Ie, d]
    ne, ie, d = want.shape
    with open_vqf(out) as vqf:
        e = vqf.entry("q4_gate")
        layer = bytes(vqf.payload(e))[: e.bytes // vqf.header.arch["n_layers"]]
    # requantized: exactly our Q4_0 encoder (kestrel) on gguf.quants' decoding of each expert
    want_bytes = b"".join(encode(QType.Q4_0, 0, "q4_gate", want[x], mode="kestrel")
                          for x in range(ne))  # fmt: skip
    assert layer == want_bytes
    got = codec("q4_0").decode(layer, ne * ie, d).reshape(ne, ie, d)
    assert np.max(np.abs(got - want)) <= np.max(np.abs(want)) / 4  # and near the values
