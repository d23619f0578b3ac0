"""`weightfile convert vision.vqf text.gguf --mmproj mmproj.gguf` (spec/vqf.md §mmproj-export):
the projector GGUF read back with gguf-py and every tensor compared with the reference binder's
decoding of the same VQF tensor — block bytes and gguf.quants' dequantized values for the Q8_0
matrices, bit patterns for the F32 ones — plus the names and keys llama.cpp's clip loader looks
up (listed here from the spec's table, not from the exporter) and the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.vqf.read import open_vqf

gguf = pytest.importorskip("gguf", reason="GGUF export needs the 'external' extra (gguf)")
pytest.importorskip("transformers", reason="the tiny Qwen3-VL checkpoint needs transformers")
from gguf.quants import dequantize  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from tests.strategies.qwen3_vl import shared_vqf

    folder = tmp_path_factory.mktemp("mmproj")
    src, text, proj = shared_vqf(), folder / "text.gguf", folder / "mmproj.gguf"
    assert main(["convert", str(src), str(text), "--mmproj", str(proj), "--quiet"]) == 0
    with open_vqf(src) as vqf:
        config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]))
    reader = gguf.GGUFReader(str(proj))
    return config, weights, reader, gguf.GGUFReader(str(text))


def values_of(t) -> np.ndarray:
    """A GGUF tensor's values as float32 in numpy order (gguf.quants for blocks)."""
    if t.tensor_type == gguf.GGMLQuantizationType.Q8_0:
        return dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
    assert t.tensor_type == gguf.GGMLQuantizationType.F32
    return np.asarray(t.data, np.float32).reshape([int(n) for n in reversed(t.shape)])


def decoded(m) -> np.ndarray:
    """The reference binder's matrix as float32 values: code × binary16 scale, or dense."""
    if hasattr(m, "values"):
        return m.values
    scales = m.scale_bits.view(np.float16).astype(np.float32)
    return m.codes.astype(np.float32) * np.repeat(scales, 32, axis=1)


def expected(config, w) -> dict[str, np.ndarray]:
    """Every tensor llama.cpp's qwen3vl projector reads (spec/vqf.md §mmproj-export table)."""
    d, ps = config.hidden_size, config.patch_size
    kernel = decoded(w.patch_embed).reshape(d, 3, 2, ps, ps)
    out = {"v.patch_embd.weight": kernel[:, :, 0], "v.patch_embd.weight.1": kernel[:, :, 1],
           "v.patch_embd.bias": w.patch_bias, "v.position_embd.weight": w.pos_embed,
           "v.post_ln.weight": w.merger.norm_w, "v.post_ln.bias": w.merger.norm_b,
           "mm.0.weight": decoded(w.merger.fc1), "mm.0.bias": w.merger.fc1_b,
           "mm.2.weight": decoded(w.merger.fc2), "mm.2.bias": w.merger.fc2_b}  # fmt: skip
    vf = config.intermediate_size
    for i, b in enumerate(w.blocks):
        parts = {"attn_qkv": (b.qkv, b.qkv_b), "attn_out": (b.proj, b.proj_b),
                 "ffn_up": (b.fc1, b.fc1_b), "ffn_down": (b.fc2, b.fc2_b),
                 "ln1": (b.norm1_w, b.norm1_b), "ln2": (b.norm2_w, b.norm2_b)}  # fmt: skip
        for short, (weight, bias) in parts.items():
            value = weight if isinstance(weight, np.ndarray) else decoded(weight)
            out[f"v.blk.{i}.{short}.weight"] = value[:, :vf] if short == "ffn_down" else value
            out[f"v.blk.{i}.{short}.bias"] = bias
    for block, m in zip(config.deepstack_visual_indexes, w.deepstack, strict=True):
        out |= {f"v.deepstack.{block}.norm.weight": m.norm_w,
                f"v.deepstack.{block}.norm.bias": m.norm_b,
                f"v.deepstack.{block}.fc1.weight": decoded(m.fc1),
                f"v.deepstack.{block}.fc1.bias": m.fc1_b,
                f"v.deepstack.{block}.fc2.weight": decoded(m.fc2),
                f"v.deepstack.{block}.fc2.bias": m.fc2_b}  # fmt: skip
    return out


def test_every_projector_tensor_equals_the_vqf_tensor_it_comes_from(exported):
    config, weights, reader, _ = exported
    want = expected(config, weights)
    got = {t.name: t for t in reader.tensors}
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        have = values_of(got[name])
        assert have.shape == value.shape, name
        assert np.array_equal(have.view(np.uint32), np.asarray(value, np.float32).view(np.uint32))


def test_q8_0_blocks_are_copied_and_padded_fc2_rows_are_f32(exported):
    config, weights, reader, _ = exported
    got = {t.name: t for t in reader.tensors}
    assert config.intermediate_size % 32  # this tower pads fc2 (48 -> 64 columns)
    for i, b in enumerate(weights.blocks):
        for short, m in (("attn_qkv", b.qkv), ("attn_out", b.proj), ("ffn_up", b.fc1)):
            t = got[f"v.blk.{i}.{short}.weight"]
            assert t.tensor_type == gguf.GGMLQuantizationType.Q8_0
            blocks = np.asarray(t.data).reshape(m.codes.shape[0], -1, 34)
            assert np.array_equal(blocks[:, :, :2].copy().view("<u2")[..., 0], m.scale_bits)
            assert np.array_equal(
                blocks[:, :, 2:].view(np.int8), m.codes.reshape(blocks[:, :, 2:].shape)
            )
        assert got[f"v.blk.{i}.ffn_down.weight"].tensor_type == gguf.GGMLQuantizationType.F32


def test_the_keys_llama_cpp_reads(exported):
    _, _, reader, text = exported
    f = {k: v.contents() for k, v in reader.fields.items()}
    assert f["general.architecture"] == "clip" and f["general.type"] == "mmproj"
    assert f["clip.projector_type"] == "qwen3vl_merger" and f["clip.has_vision_encoder"] is True
    assert f["clip.use_gelu"] is True
    v = "clip.vision."
    assert (
        f[v + "embedding_length"],
        f[v + "feed_forward_length"],
        f[v + "block_count"],
        f[v + "attention.head_count"],
        f[v + "projection_dim"],
        f[v + "patch_size"],
        f[v + "spatial_merge_size"],
    ) == (32, 48, 3, 2, 64, 16, 2)  # tests/strategies VISION
    assert f[v + "image_size"] == 4 * 16  # a 4 x 4 position table of 16-pixel patches
    assert f[v + "image_mean"] == [0.5] * 3 and f[v + "image_std"] == [0.5] * 3
    assert np.float32(f[v + "attention.layer_norm_epsilon"]) == np.float32(1e-6)
    assert f[v + "is_deepstack_layers"] == [True, False, True]
    # the text tower went to the usual qwen3 GGUF beside it
    assert text.fields["general.architecture"].contents() == "qwen3"
    assert not any(t.name.startswith("v.") for t in text.tensors)


def test_refusals(tmp_path, capsys):
    from tests.strategies.qwen3_vl import shared_vqf
    from weightfile.examples import write_example

    out, proj = tmp_path / "t.gguf", tmp_path / "m.gguf"
    dense = write_example(tmp_path / "dense.vqf")
    assert main(["convert", str(shared_vqf()), str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "vqf.import.source" in err and "--mmproj" in err and not out.exists()
    assert main(["convert", str(dense), str(out), "--mmproj", str(proj), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "vqf.import.option" in err and "VISION" in err and not proj.exists()
    assert main(["convert", str(shared_vqf()), str(tmp_path / "x.vqf"), "--mmproj", str(proj),
                 "--quiet"]) == 2  # fmt: skip
    assert "--mmproj is for a .gguf destination" in capsys.readouterr().err
    proj.write_bytes(b"taken")  # an existing projector file is kept without --force
    assert main(["convert", str(shared_vqf()), str(out), "--mmproj", str(proj), "--quiet"]) != 0
    assert proj.read_bytes() == b"taken" and not out.exists()


def test_an_unpadded_fc2_is_copied_as_q8_0_blocks_too(tmp_path):
    """A seeded synthetic tower whose vis_ffn (96) is whole Q8_0 blocks: fc2 is copied, not
    decoded, and every tensor still equals the binder's."""
    from dataclasses import replace

    from weightfile.bench.synthetic import SPECS, arch_of, tensor_sources
    from weightfile.convert.vqf_mmproj import export_mmproj
    from weightfile.ref.vqf.write import write_vqf

    s = replace(SPECS["tiny-vl-q8_0"], vis_ffn=96)
    src = write_vqf(tmp_path / "vl.vqf", arch=arch_of(s), tensors=tensor_sources(s), flags=s.flags)
    proj = export_mmproj(src, tmp_path / "mmproj.gguf")
    with open_vqf(src) as vqf:
        config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]))
    got = {t.name: t for t in gguf.GGUFReader(str(proj)).tensors}
    want = expected(config, weights)
    assert sorted(got) == sorted(want) and config.intermediate_size == 96
    for name, value in want.items():
        assert np.array_equal(values_of(got[name]).view(np.uint32), value.view(np.uint32)), name
    for i, b in enumerate(weights.blocks):
        t = got[f"v.blk.{i}.ffn_down.weight"]
        assert t.tensor_type == gguf.GGMLQuantizationType.Q8_0
        blocks = np.asarray(t.data).reshape(config.hidden_size, -1, 34)
        assert np.array_equal(blocks[:, :, :2].copy().view("<u2")[..., 0], b.fc2.scale_bits)
