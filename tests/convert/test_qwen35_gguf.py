"""Qwen3.5 `.ninfer` ↔ llama.cpp GGUF (spec/ninfer3.md §qwen35-gguf).

The export is checked against llama.cpp's converter rules applied here, independently, to the
Hugging Face checkpoint's own tensors (numpy reshapes written from spec/ninfer3.md's restatement:
value heads [Nk, r, width] swapped to [r, Nk, width], norms + 1, ssm_a = −exp(A_log), conv1d
squeezed, q_proj as it is); the import by the round trip, which must give every parameter's
values back bit for bit and copy Q8_0 / BF16 blocks unchanged. The checkpoint has 2 key heads and
4 value heads, so the tiled order differs from the grouped one.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_official import MOE, TEXT, write_official

from weightfile.cli import main
from weightfile.families.qwen35.from_gguf import import_gguf
from weightfile.families.qwen35.to_gguf import export_gguf
from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.fast.backend import FAST
from weightfile.model_file import open_model_file, validate
from weightfile.spec.errors import InvalidError, MalformedError, UnsupportedError

gguf = pytest.importorskip("gguf")
LAYERS = 4  # layer 3 is full attention; the MTP block is blk.4


def tensors_of(path) -> dict[str, np.ndarray]:
    """Every GGUF tensor as float32 in numpy order (gguf-py's dequantisation)."""
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        values = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
        out[t.name] = values.reshape([int(x) for x in reversed(t.shape)]).astype(np.float32)
    return out


def tiled(w: np.ndarray, axis: int, width: int) -> np.ndarray:
    """llama.cpp's reorder along `axis`: [Nk, r, width] -> [r, Nk, width]."""
    nk = TEXT["linear_num_key_heads"]
    r = TEXT["linear_num_value_heads"] // nk
    w = np.moveaxis(w, axis, 0)
    rest = w.shape[1:]
    w = w.reshape(nk, r, width, *rest).swapaxes(0, 1).reshape(-1, *rest)
    return np.moveaxis(w, 0, axis)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gguf_dense")
    t = write_official(folder, layers=LAYERS, depth=0)
    nf = import_checkpoint(folder, folder / "bf16.ninfer", fmt="bf16", backend=FAST)[0]
    q8 = import_checkpoint(folder, folder / "q8.ninfer", fmt="q8_g32_fp16", backend=FAST)[0]
    return folder, t, nf, q8


def q8_values(x: np.ndarray) -> np.ndarray:
    """`q8_g32_fp16` values of `x` along its last axis: spec/ninfer3.md §grouped-absmax written
    out in NumPy (binary16 scale of amax / 127, codes rint(x · f32(1 / scale)) clamped to ±127).
    Not gguf-py's Q8_0 quantiser, which multiplies by 1 / (amax / 127) before rounding the scale
    and rounds halves away from zero: it picks another code for about 1% of these weights."""
    g = x.astype(np.float32).reshape(*x.shape[:-1], -1, 32)
    amax = np.max(np.abs(g), axis=-1, keepdims=True)
    scale = (amax.astype(np.float64) / 127).astype(np.float32).astype(np.float16)
    scale = np.where((scale == 0) & (amax > 0), np.float16(2.0**-24), scale).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = (1 / scale.astype(np.float64)).astype(np.float32)
    codes = np.clip(np.rint(np.where(amax > 0, g * inv, 0).astype(np.float32)), -127, 127)
    return (codes * scale).astype(np.float32).reshape(x.shape)


def expected(t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """llama.cpp's converter rules applied to checkpoint tensors `t` (module docstring)."""
    m, a = "model.language_model.layers.", "model.language_model.layers.0.linear_attn."
    kg = TEXT["linear_num_key_heads"] * TEXT["linear_key_head_dim"]
    dv = TEXT["linear_value_head_dim"]
    qkv, conv = t[a + "in_proj_qkv.weight"], t[a + "conv1d.weight"][:, 0, :]
    mtp = "mtp.layers.0."
    return {
        "blk.0.attn_qkv.weight": np.concatenate([qkv[: 2 * kg], tiled(qkv[2 * kg :], 0, dv)]),
        "blk.0.attn_gate.weight": tiled(t[a + "in_proj_z.weight"], 0, dv),
        "blk.0.ssm_alpha.weight": tiled(t[a + "in_proj_a.weight"], 0, 1),
        "blk.0.ssm_beta.weight": tiled(t[a + "in_proj_b.weight"], 0, 1),
        "blk.0.ssm_a": tiled(-np.exp(t[a + "A_log"].astype(np.float64)), 0, 1),
        "blk.0.ssm_dt.bias": tiled(t[a + "dt_bias"], 0, 1),
        "blk.0.ssm_out.weight": tiled(t[a + "out_proj.weight"], 1, dv),
        "blk.0.ssm_norm.weight": t[a + "norm.weight"],
        "blk.0.ssm_conv1d.weight": np.concatenate([conv[: 2 * kg], tiled(conv[2 * kg :], 0, dv)]),
        "blk.0.attn_norm.weight": t[m + "0.input_layernorm.weight"] + 1,
        "blk.0.ffn_up.weight": t[m + "0.mlp.up_proj.weight"],
        "blk.3.attn_q.weight": t[m + "3.self_attn.q_proj.weight"],
        "blk.3.attn_output.weight": t[m + "3.self_attn.o_proj.weight"],
        "blk.3.attn_k_norm.weight": t[m + "3.self_attn.k_norm.weight"] + 1,
        "output_norm.weight": t["model.language_model.norm.weight"] + 1,
        "output.weight": t["lm_head.weight"],
        "token_embd.weight": t["model.language_model.embed_tokens.weight"],
        "blk.4.nextn.eh_proj.weight": t["mtp.fc.weight"],
        "blk.4.nextn.enorm.weight": t["mtp.pre_fc_norm_embedding.weight"] + 1,
        "blk.4.nextn.shared_head_norm.weight": t["mtp.norm.weight"] + 1,
        "blk.4.attn_q.weight": t[mtp + "self_attn.q_proj.weight"],
        "blk.4.attn_v.weight": t[mtp + "self_attn.v_proj.weight"],
        "blk.4.ffn_down.weight": t[mtp + "mlp.down_proj.weight"],
    }  # fmt: skip


@pytest.mark.parametrize("which", ["bf16", "q8"])
def test_export_applies_llama_cpp_s_transforms(dense, which):
    """bf16: the checkpoint's values; q8: every Q8_0 tensor (read by gguf-py) holds the checkpoint
    matrix's q8_g32_fp16 values (blocks of 32 along its input axis) moved by the same rules, so a
    block copied to the wrong place or a value head reordered inside a block fails."""
    folder, t, nf, q8 = dense
    path = export_gguf(nf if which == "bf16" else q8, folder / f"{which}-x.gguf")
    g = tensors_of(path)
    kinds = {x.name: x.tensor_type for x in gguf.GGUFReader(path).tensors}
    plain, rounded = (
        expected(t),
        expected({k: q8_values(v) if v.ndim == 2 else v for k, v in t.items()}),
    )
    assert which == "bf16" or kinds["blk.0.ssm_out.weight"] == gguf.GGMLQuantizationType.Q8_0
    for name, values in plain.items():
        if kinds[name] == gguf.GGMLQuantizationType.Q8_0:
            values = rounded[name]
        np.testing.assert_array_equal(g[name], np.float32(values), err_msg=name)
    meta = gguf.GGUFReader(path).fields
    assert meta["qwen35.block_count"].contents() == LAYERS + 1
    assert meta["qwen35.nextn_predict_layers"].contents() == 1


def every_value(path) -> dict[str, np.ndarray]:
    with open_model_file(path) as f:
        return {n: f.decode(n) for n in f.artifact.directory.bindings}


@pytest.mark.parametrize("which", ["bf16", "q8"])
def test_the_round_trip_gives_every_weight_back(dense, which):
    folder, _, nf, q8 = dense
    src = nf if which == "bf16" else q8
    back = import_gguf(
        export_gguf(src, folder / f"{which}-rt.gguf"), folder / f"{which}.back.ninfer"
    )
    assert validate(back[0]) == []
    before, after = every_value(src), every_value(back[0])
    assert set(before) == set(after)
    for name, values in before.items():
        np.testing.assert_array_equal(after[name], values, err_msg=name)
    with open_model_file(src) as a, open_model_file(back[0]) as b:
        assert set(b.artifact.directory.components) == {"text", "mtp"}
        for name in ("text/layers/0/gdn/value", "mtp/layers/0/attention/gate", "text/output_head"):
            wa, wb = a.decode_words(name), b.decode_words(name)  # blocks copied, not requantised
            assert all(np.array_equal(wa[k], wb[k]) for k in wa), name


def test_moe_with_fused_experts_round_trips_through_the_command_line(tmp_path):
    write_official(tmp_path, layers=LAYERS, depth=0, moe=True, fused=True)
    nf = import_checkpoint(tmp_path, tmp_path / "moe.ninfer", fmt="q8_g32_fp16", backend=FAST)[0]
    assert main(["convert", str(nf), str(tmp_path / "moe.gguf")]) == 0
    assert main(["convert", str(tmp_path / "moe.gguf"), str(tmp_path / "back.ninfer")]) == 0
    before, after = every_value(nf), every_value(tmp_path / "back.ninfer")
    for name, values in before.items():
        np.testing.assert_array_equal(after[name], values, err_msg=name)
    assert gguf.GGUFReader(tmp_path / "moe.gguf").fields["general.architecture"].contents() == (
        "qwen35moe"
    )


def test_moe_q8_export_holds_the_checkpoint_experts(tmp_path):
    """Fused experts [E, 2I, H] split into gate / up stacks, the router and the shared expert,
    text and MTP, each Q8_0 tensor equal to the checkpoint's q8_g32_fp16 values (gguf-py reads)."""
    t = write_official(tmp_path, layers=LAYERS, depth=0, moe=True, fused=True)
    nf = import_checkpoint(tmp_path, tmp_path / "moe.ninfer", fmt="q8_g32_fp16", backend=FAST)[0]
    g = tensors_of(export_gguf(nf, tmp_path / "moe.gguf"))
    i = MOE["moe_intermediate_size"]
    for blk, p in ((0, "model.language_model.layers.0.mlp."), (LAYERS, "mtp.layers.0.mlp.")):
        gate_up = q8_values(t[p + "experts.gate_up_proj"])
        want = {
            "ffn_gate_exps": gate_up[:, :i], "ffn_up_exps": gate_up[:, i:],
            "ffn_down_exps": q8_values(t[p + "experts.down_proj"]),
            "ffn_gate_inp": q8_values(t[p + "gate.weight"]),
            "ffn_gate_inp_shexp": q8_values(t[p + "shared_expert_gate.weight"]),
            "ffn_down_shexp": q8_values(t[p + "shared_expert.down_proj.weight"]),
        }  # fmt: skip
        for name, values in want.items():
            got = g[f"blk.{blk}.{name}.weight"]
            np.testing.assert_array_equal(got.reshape(values.shape), values, err_msg=name)


def test_formats_without_a_shared_block_need_requantize(tmp_path):
    write_official(tmp_path, layers=LAYERS, depth=0)
    nf = import_checkpoint(tmp_path, tmp_path / "r.ninfer", recipe="qwen3_6_27b", backend=FAST)[0]
    with pytest.raises(UnsupportedError) as exc:
        export_gguf(nf, tmp_path / "r.gguf")
    assert exc.value.rule == "qwen35.gguf.requantize"
    assert not (tmp_path / "r.gguf").exists()
    out = export_gguf(nf, tmp_path / "r.gguf", requantize=True)
    back = import_gguf(out, tmp_path / "r.back.ninfer")[0]
    before, after = every_value(nf), every_value(back)
    for name in ("text/layers/3/attention/query", "text/output_head"):
        step = np.abs(before[name]).max(axis=1, keepdims=True) / 127  # one Q8_0 step per row
        assert np.all(np.abs(after[name] - before[name]) <= step), name


def test_bad_gguf_files_are_typed_errors(tmp_path):
    (tmp_path / "junk.gguf").write_bytes(b"GGUF" + b"\xff" * 60)
    with pytest.raises(MalformedError) as exc:
        import_gguf(tmp_path / "junk.gguf", tmp_path / "x.ninfer")
    assert exc.value.rule == "qwen35.gguf.file"
    w = gguf.GGUFWriter(tmp_path / "llama.gguf", "llama")
    w.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    with pytest.raises(UnsupportedError) as exc:
        import_gguf(tmp_path / "llama.gguf", tmp_path / "x.ninfer")
    assert exc.value.rule == "qwen35.gguf.architecture"
    w = gguf.GGUFWriter(tmp_path / "bare.gguf", "qwen35")
    w.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    with pytest.raises(InvalidError) as exc:
        import_gguf(tmp_path / "bare.gguf", tmp_path / "x.ninfer")
    assert exc.value.rule == "qwen35.gguf.config"
    assert not (tmp_path / "x.ninfer").exists()


def test_a_missing_tensor_or_tokenizer_is_named(dense):
    from weightfile.families.qwen35.from_gguf import GGUFTensors, gguf_resources

    folder, _, nf, _ = dense
    path = folder / "bf16.gguf"
    if not path.exists():
        export_gguf(nf, path)
    with pytest.raises(InvalidError) as exc:
        GGUFTensors(gguf.GGUFReader(path), False).stored("blk.0.ssm_a.missing")
    assert exc.value.rule == "qwen35.gguf.tensor"
    with pytest.raises(UnsupportedError) as exc:
        gguf_resources({"tokenizer.ggml.model": "llama"})
    assert exc.value.rule == "qwen35.gguf.tokenizer"
