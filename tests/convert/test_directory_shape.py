"""Directory rows × cols are the same whichever tool wrote the file (issue 34 item 4,
spec/vqf.md §geometry): every writer records the spec/vqf.md §text-tensors shapes the engine's
writer records (gate/up nl·ff × d, down nl·d × ff), the strict validator reports any other
factorisation as `vqf.directory.shape`, and a VQF -> GGUF -> VQF round trip gives back the same
bytes.

The expected shapes are written out from the symbols of spec/vqf.md §text-tensors for the example's
arch (d 64, nl 2, qo 64, ko 32, ff 128, V 256), not taken from the inventory the writers use.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from strategies.vqf import patch_entry

from weightfile.bench.synthetic import synthetic_model
from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH, TINY_ARCH, example_state_dict
from weightfile.families.qwen3.to_vqf import import_checkpoint
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate

pytest.importorskip("gguf", reason="the GGUF round trip needs gguf-py")

#: spec/vqf.md §text-tensors for d = 64, nl = 2, qo = 4·16, ko = 2·16, ff = 128, V = 256.
EXAMPLE_SHAPES = {
    "token_embed": (256, 64),
    "q4_q": (2 * 64, 64),
    "q4_k": (2 * 64, 32),
    "q4_v": (2 * 64, 32),
    "q4_o": (2 * 64, 64),
    "q4_gate": (2 * 128, 64),
    "q4_up": (2 * 128, 64),
    "q4_down": (2 * 64, 128),
    "q4_lm": (256, 64),
}


def shapes(path: Path) -> dict[str, tuple[int, int]]:
    with open_vqf(path) as f:
        return {e.name: (e.rows, e.cols) for e in f.entries}


def index_of(path: Path, name: str) -> int:
    with open_vqf(path) as f:
        return next(e.index for e in f.entries if e.name == name)


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory) -> Path:
    """The bundled example's weights as a Hugging Face checkpoint folder."""
    from safetensors.numpy import save_file

    folder = tmp_path_factory.mktemp("hf")
    a = TINY_ARCH
    config = {
        "model_type": "qwen3", "vocab_size": a["vocab_size"], "hidden_size": a["dim"],
        "intermediate_size": a["ffn_dim"], "num_hidden_layers": a["n_layers"],
        "num_attention_heads": a["n_heads"], "num_key_value_heads": a["n_kv_heads"],
        "head_dim": a["head_dim"], "rope_theta": a["rope_theta"], "rms_norm_eps": a["norm_eps"],
        "max_position_embeddings": a["max_seq_len"], "bos_token_id": 1, "eos_token_id": 2,
        "tie_word_embeddings": False,
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    save_file(example_state_dict(TINY_ARCH), str(folder / "model.safetensors"))
    return folder


def test_the_example_and_the_importer_record_the_spec_shapes(hf_folder, tmp_path):
    assert {n: s for n, s in shapes(EXAMPLE_PATH).items() if n in EXAMPLE_SHAPES} == EXAMPLE_SHAPES
    out = import_checkpoint(hf_folder, tmp_path / "m.vqf", qtype="q4_0")
    assert {n: s for n, s in shapes(out).items() if n in EXAMPLE_SHAPES} == EXAMPLE_SHAPES
    assert out.read_bytes() == EXAMPLE_PATH.read_bytes()  # the example is that import
    q8 = import_checkpoint(hf_folder, tmp_path / "q8.vqf", qtype="q8_0", layout="legacy")
    got = shapes(q8)
    assert (got["q8_gate"], got["q8_up"], got["q8_down"]) == ((256, 64), (256, 64), (128, 128))
    assert validate(q8, checksum=True) == []


#: Other factorisations of the same element count: what the earlier importers wrote for gate
#: (nl·d × ff) and down (nl·ff × d), and a transposed q.
@pytest.mark.parametrize(
    ("name", "other"), [("q4_gate", (128, 128)), ("q4_down", (256, 64)), ("q4_q", (64, 128))]
)
def test_another_factorisation_is_vqf_directory_shape(tmp_path, name, other):
    legal = Path(shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf"))
    assert validate(legal, checksum=True) == []
    rows, cols = EXAMPLE_SHAPES[name]
    assert other[0] * other[1] == rows * cols and other != (rows, cols)
    i = index_of(legal, name)
    patch_entry(legal, i, rows=other[0], cols=other[1])
    found = validate(legal, checksum=True)
    assert [v.rule for v in found] == ["vqf.directory.shape"]
    assert found[0].path == f"directory[{i}].rows"
    assert found[0].offset == 448 + 64 * i + 36  # the rows field (spec/vqf.md §entry)


def test_a_wrong_element_count_is_geometry_not_shape(tmp_path):
    legal = Path(shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf"))
    patch_entry(legal, index_of(legal, "q4_gate"), rows=2 * 128, cols=32)
    rules = [v.rule for v in validate(legal)]
    assert "vqf.directory.geometry" in rules and "vqf.directory.shape" not in rules


@pytest.mark.parametrize(
    ("model", "wmode"),
    [("tiny-q4_0", "q4"), ("tiny-q8_0", "q8"), ("tiny-moe-q4_0", "q4"), ("tiny-moe-q8_0", "q8")],
)
def test_vqf_to_gguf_to_vqf_is_byte_identical(tmp_path, model, wmode):
    """The synthetic bench models are written from the inventory, not by an importer."""
    src, _ = synthetic_model(model, tmp_path / "cache")
    gguf, back = tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert main(["convert", str(src), str(gguf), "--quiet"]) == 0
    assert main(["convert", str(gguf), str(back), "--wmode", wmode, "--quiet"]) == 0
    assert back.read_bytes() == src.read_bytes()


def test_an_imported_file_survives_the_round_trip_too(hf_folder, tmp_path):
    src = import_checkpoint(hf_folder, tmp_path / "m.vqf", qtype="q8_0")
    gguf, back = tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert main(["convert", str(src), str(gguf), "--quiet"]) == 0
    assert main(["convert", str(gguf), str(back), "--wmode", "q8", "--quiet"]) == 0
    assert back.read_bytes() == src.read_bytes()


def test_from_array_stacks_take_the_inventory_shapes():
    """The public writer API (TensorSource.from_array) on [n_layers, out, in] stacks, and the
    rule it uses against the inventory for another geometry."""
    import numpy as np

    import weightfile
    from weightfile.spec.vqf.inventory import KINDS, Geometry, stacked_directory_shape

    stacks = {"q4_q": (2, 64, 64), "q4_k": (2, 32, 64), "q4_gate": (2, 128, 64),
              "q4_down": (2, 64, 128)}  # fmt: skip
    for name, shape in stacks.items():
        src = weightfile.TensorSource.from_array(name, np.zeros(shape), qtype=0x03)
        assert (src.rows, src.cols) == EXAMPLE_SHAPES[name], name
    g = Geometry.from_arch({**TINY_ARCH, "dim": 96, "ffn_dim": 160, "n_layers": 3})
    for kind in KINDS.values():
        if kind.family in ("q8", "q4", "x8") and not kind.name.endswith("_lm"):
            count, out, inner = kind.physical(g)
            got = stacked_directory_shape(kind.name, count, out, inner)
            assert got == kind.directory_shape(g), kind.name
