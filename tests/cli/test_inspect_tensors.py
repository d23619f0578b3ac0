"""Issue 34 item 13: `inspect --layer N` / `--filter GLOB` list tensors one per row with their
logical shapes, as gguf-dump does, and count parameters.

The golden numbers come from gguf-py: the bundled example exported to GGUF (VQF -> GGUF, blocks
untiled) and read back with `gguf.GGUFReader`; per tensor, the element count and shape
gguf-py reports (its shape is innermost first, ours outermost first) must be ours, layer by layer
(`blk.N.*` against `--layer N`) and for the whole file.
"""

from __future__ import annotations

import json

import pytest

from weightfile.cli import main
from weightfile.commands._common import EXIT_USAGE
from weightfile.examples import EXAMPLE_PATH

#: The VQF name of each GGUF tensor (llama.cpp's qwen3 names, spec/vqf.md §converter).
GGUF_OF = {
    "attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "q_norm": "attn_q_norm",
    "k_norm": "attn_k_norm", "q4_q": "attn_q", "q4_k": "attn_k", "q4_v": "attn_v",
    "q4_o": "attn_output", "q4_gate": "ffn_gate", "q4_up": "ffn_up", "q4_down": "ffn_down",
}  # fmt: skip


def inspect_json(capsys, *flags: str) -> dict:
    assert main(["inspect", str(EXAMPLE_PATH), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def gguf_tensors(tmp_path_factory) -> dict[str, tuple[list[int], int]]:
    gguf = pytest.importorskip("gguf")
    out = tmp_path_factory.mktemp("g") / "example.gguf"
    assert main(["convert", str(EXAMPLE_PATH), str(out)]) == 0
    reader = gguf.GGUFReader(out)
    return {
        t.name: ([int(n) for n in reversed(t.shape)], int(t.n_elements)) for t in reader.tensors
    }


@pytest.mark.parametrize("layer", [0, 1])
def test_layer_rows_match_gguf_py(layer, gguf_tensors, capsys) -> None:
    doc = inspect_json(capsys, "--layer", str(layer))
    got = {r["name"]: (r["shape"], r["elements"]) for r in doc["tensors"]}
    want = {
        f"{vqf}[{layer}]": gguf_tensors[f"blk.{layer}.{g}.weight"] for vqf, g in GGUF_OF.items()
    }
    assert got == want
    in_gguf = sum(n for name, (_, n) in gguf_tensors.items() if name.startswith(f"blk.{layer}."))
    assert doc["parameters"] == in_gguf


def test_the_whole_files_parameter_count_is_gguf_pys(gguf_tensors, capsys) -> None:
    doc = inspect_json(capsys, "--filter", "*")
    assert doc["parameters"] == sum(n for _, n in gguf_tensors.values())
    assert len(doc["tensors"]) == 14  # every directory entry, none a copy
    text_flags = ["inspect", str(EXAMPLE_PATH), "--filter", "*norm*"]
    assert main(text_flags) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["#", "elements", "shape", "type", "name"]
    assert [line.split()[-1] for line in out[1:-1]] == [
        "final_norm", "attn_norm", "ffn_norm", "q_norm", "k_norm"
    ]  # fmt: skip
    assert out[-1] == "5 tensors, 384 parameters"  # 64 + 2·64 + 2·64 + 2·16 + 2·16


def test_a_layer_out_of_range_is_a_usage_error(capsys) -> None:
    assert main(["inspect", str(EXAMPLE_PATH), "--layer", "2"]) == EXIT_USAGE
    assert "layers 0..1" in capsys.readouterr().err
