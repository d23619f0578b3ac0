"""Streaming conversion (spec/vqf.md §converter): the [V, d] tensors are read, encoded and written a
band of rows at a time, and that changes no byte; peak RSS grows by less than the largest tensor.

Golden values: the whole-matrix encoders (`weightfile.ref.vqf.encode.encode`, the path the other
convert tests tie to the engine's bytes) and the checkpoint's own float32 tensors.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.convert.checkpoint import Checkpoint
from weightfile.families.qwen3 import to_vqf as qwen3_vqf
from weightfile.families.qwen3.to_vqf import RULES, row_bands
from weightfile.ref.codecs.vqf import f16 as ref_f16
from weightfile.ref.vqf.encode import encode
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.vqf.qtypes import QType

ml_dtypes = pytest.importorskip("ml_dtypes")
from safetensors.numpy import save_file  # noqa: E402


def write_checkpoint(folder: Path, vocab: int, hidden: int = 64, inter: int = 128) -> Path:
    """A one-layer dense Qwen3 checkpoint of seeded random F16 weights, untied lm_head."""
    rng = np.random.default_rng(5)
    heads, kv, hd = 2, 1, 32
    shapes = {
        "model.embed_tokens.weight": (vocab, hidden), "lm_head.weight": (vocab, hidden),
        "model.norm.weight": (hidden,),
    }  # fmt: skip
    p = "model.layers.0."
    shapes |= {
        p + "input_layernorm.weight": (hidden,), p + "post_attention_layernorm.weight": (hidden,),
        p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
        p + "self_attn.q_proj.weight": (heads * hd, hidden),
        p + "self_attn.k_proj.weight": (kv * hd, hidden),
        p + "self_attn.v_proj.weight": (kv * hd, hidden),
        p + "self_attn.o_proj.weight": (hidden, heads * hd),
        p + "mlp.gate_proj.weight": (inter, hidden), p + "mlp.up_proj.weight": (inter, hidden),
        p + "mlp.down_proj.weight": (hidden, inter),
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {n: (0.05 * rng.standard_normal(s)).astype(np.float16) for n, s in shapes.items()}
    save_file(tensors, str(folder / "model.safetensors"))
    config = {
        "model_type": "qwen3", "vocab_size": vocab, "hidden_size": hidden,
        "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": heads,
        "num_key_value_heads": kv, "head_dim": hd, "rope_theta": 1e6, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_row_bands_cover_the_rows_in_whole_row_groups():
    bands = row_bands(1000, 64, band_bytes=64 * 4 * 100)  # 100 rows' worth -> 64-row bands
    assert bands[0] == (0, 64) and bands[-1] == (960, 1000)
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(bands))
    assert all((b - a) % 64 == 0 for a, b in bands[:-1])
    assert row_bands(10, 1 << 20) == [(0, 10)]  # a huge row still gets one band


@pytest.mark.parametrize("wmode", ["q8", "q4", "dual", "q4i", "g256", "f16", "f32"])
def test_banded_embedding_and_lm_head_are_the_whole_matrix_bytes(tmp_path, monkeypatch, wmode):
    # 200 rows: bands of 64, 64, 64 and a last one of 8 (a whole Q8 8-row group)
    src = write_checkpoint(tmp_path / "hf", vocab=200)
    monkeypatch.setattr(qwen3_vqf, "BAND_BYTES", 1)
    out = tmp_path / "m.vqf"
    assert main(["convert", str(src), str(out), "--wmode", wmode, "--quiet"]) == 0
    with Checkpoint(src, RULES) as ck, open_vqf(out) as vqf:
        flags = vqf.header.flags
        embed, head = ck["model.embed_tokens.weight"], ck["lm_head.weight"]
        emb = vqf.entry("token_embed")
        want = (
            embed.tobytes()
            if emb.qtype == QType.F32
            else ref_f16.encode(embed, 200, 64, mode="trunc_ftz")
        )
        assert bytes(vqf.payload(emb)) == want
        mode = None if wmode in ("f32", "f16") else "kestrel"
        lms = [e for e in vqf.entries if e.name.endswith("_lm")]
        assert lms
        for e in lms:
            assert bytes(vqf.payload(e)) == encode(QType(e.qtype), flags, e.name, head,
                                                   mode=mode), e.name  # fmt: skip


def test_the_checkpoint_reads_a_band_of_rows_alone(tmp_path):
    src = write_checkpoint(tmp_path / "hf", vocab=136)
    with Checkpoint(src, RULES) as ck:
        whole = ck["lm_head.weight"]
        assert np.array_equal(ck.rows("lm_head.weight", 64, 136), whole[64:136])


CHILD = """
import resource, sys
import weightfile.families.qwen3.to_vqf as q
from weightfile.cli import main
q.BAND_BYTES = 1 << 20  # 1 MiB bands: what they cost stays far below the tensor measured
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
sys.exit(code)
"""


def peak(argv: list[str], cwd: Path) -> int:
    """Peak RSS in bytes of one conversion in a fresh interpreter (after exec, so the parent's
    resident set is not inherited)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True,
        cwd=cwd, env={**os.environ, "PYTHONHASHSEED": "0"},
    )  # fmt: skip
    return int(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units and behaviour are Linux's")
def test_peak_rss_grows_by_less_than_the_largest_tensor(tmp_path):
    # the same code path on a tiny vocabulary and on one whose [V, d] tensors are 33 MB float32:
    # the difference of the peaks is what the large tensors cost, and banding keeps it under one
    # of them (whole-matrix encoding cost ~10x, the measurement of issue 20; the GGUF export's
    # figure is benchmarks/bench_convert_rss.py's, kept out of CI for time)
    small = write_checkpoint(tmp_path / "small", vocab=256, hidden=256, inter=256)
    large = write_checkpoint(tmp_path / "large", vocab=32768, hidden=256, inter=256)
    largest_f32 = 32768 * 256 * 4
    peaks = {
        name: peak(["convert", str(src), str(tmp_path / f"{name}.vqf"), "--quiet"], tmp_path)
        for name, src in (("small", small), ("large", large))
    }
    grown = peaks["large"] - peaks["small"]
    assert grown < largest_f32, f"+{grown / 1e6:.0f} MB for a {largest_f32 / 1e6:.0f} MB tensor"


def test_progress_is_one_step_per_tensor_in_file_order(tmp_path):
    from weightfile.convert.dispatch import ConvertOptions, convert

    src = write_checkpoint(tmp_path / "hf", vocab=64)
    seen: list[tuple[str, int]] = []
    out = tmp_path / "m.vqf"
    convert(src, out, ConvertOptions(progress=lambda name, total: seen.append((name, total))))
    with open_vqf(out) as vqf:
        names = [e.name for e in vqf.entries]
    assert [n for n, _ in seen] == names and {t for _, t in seen} == {len(names)}
    seen.clear()
    convert(out, tmp_path / "m.gguf", ConvertOptions(progress=lambda n, t: seen.append((n, t))))
    assert seen[0] == ("token_embd.weight", len(seen)) and seen[-1][0] == "output.weight"


@pytest.mark.parametrize("quiet", [False, True])
def test_the_bar_is_drawn_on_a_terminal_unless_quiet(tmp_path, capsys, monkeypatch, quiet):
    src = write_checkpoint(tmp_path / "hf", vocab=64)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["convert", str(src), str(tmp_path / "m.vqf")] + ["--quiet"] * quiet
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert ("tensor" in err and "convert" in err) != quiet


@pytest.mark.parametrize("wmode", ["q8", "q4"])
def test_a_banded_gguf_export_is_the_whole_tensor_export(tmp_path, monkeypatch, wmode):
    # vocabulary 200: the tiled lm_head's bands of 64 rows are untiled one at a time
    src = write_checkpoint(tmp_path / "hf", vocab=200)
    vqf = tmp_path / "m.vqf"
    assert main(["convert", str(src), str(vqf), "--wmode", wmode, "--quiet"]) == 0
    assert main(["convert", str(vqf), str(tmp_path / "whole.gguf"), "--quiet"]) == 0
    monkeypatch.setattr(qwen3_vqf, "BAND_BYTES", 1)
    assert main(["convert", str(vqf), str(tmp_path / "banded.gguf"), "--quiet"]) == 0
    whole, banded = (tmp_path / "whole.gguf").read_bytes(), (tmp_path / "banded.gguf").read_bytes()
    assert whole == banded
    # no tokenizer sidecar: llama.cpp's "none" model with the vocabulary size, so it still loads
    import gguf

    fields = gguf.GGUFReader(str(tmp_path / "whole.gguf")).fields
    assert fields["tokenizer.ggml.model"].contents() == "none"
    assert fields["qwen3.vocab_size"].contents() == 200
