"""`weightfile convert MODEL.gguf OUT.vqf`: GGUF files written by gguf-py (GGUFWriter,
gguf.quants.quantize) from a tiny transformers checkpoint, converted and compared tensor by
tensor with gguf.quants — the raw blocks and the dequantized values — and against the same
weights imported from Hugging Face (spec/vqf.md §7.7).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.ref.codecs.vqf import codec
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf

gguf = pytest.importorskip("gguf", reason="GGUF conversion needs the 'external' extra (gguf)")
torch = pytest.importorskip("torch", reason="needs the 'external' extra (torch)")
transformers = pytest.importorskip("transformers", reason="needs the 'external' extra")
from gguf.quants import dequantize, quantize  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

LAYER = {
    "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}  # fmt: skip
TOP = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def gguf_name(hf: str) -> str:
    if hf in TOP:
        return TOP[hf]
    parts = hf.split(".")
    return f"blk.{parts[2]}.{LAYER['.'.join(parts[3:-1])]}.weight"


@pytest.fixture(scope="module")
def hf(tmp_path_factory) -> Path:
    torch.manual_seed(5)
    cfg = transformers.Qwen3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("hf")
    transformers.Qwen3ForCausalLM(cfg).save_pretrained(folder)
    return folder


def write_gguf(hf: Path, out: Path, qtype: str) -> dict[str, np.ndarray]:
    """The llama.cpp qwen3 layout of the checkpoint; returns the dequantized weights by HF name."""
    cfg = json.loads((hf / "config.json").read_text())
    q = getattr(gguf.GGMLQuantizationType, qtype)
    w = gguf.GGUFWriter(str(out), "qwen3")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    values = {}
    for name, v in load_file(str(hf / "model.safetensors")).items():
        v = np.ascontiguousarray(v, dtype=np.float32)
        if v.ndim == 1:
            w.add_tensor(gguf_name(name), v)
            values[name] = v
        elif name == "model.embed_tokens.weight":
            w.add_tensor(gguf_name(name), v.astype(np.float16))
            values[name] = v.astype(np.float16).astype(np.float32)
        else:
            blocks = quantize(v, q)
            w.add_tensor(gguf_name(name), blocks, raw_dtype=q)
            values[name] = dequantize(blocks, q).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return values


def reader_blocks(path: Path) -> dict[str, bytes]:
    return {t.name: np.asarray(t.data).tobytes() for t in gguf.GGUFReader(str(path)).tensors}


def logits(path: Path) -> np.ndarray:
    with open_vqf(path) as vqf:
        config, weights = bind_vqf(vqf)
    model = Qwen3Model(config, weights)
    return model.forward([3, 141, 59, 26], model.new_cache())


@pytest.mark.parametrize(("qtype", "wmode", "tiled", "base"), [
    ("Q8_0", "q8", "q8_0_8x8", "q8_0"), ("Q4_0", "q4", "q4_0_4x4", "q4_0"),
])  # fmt: skip
def test_gguf_blocks_are_copied_and_tiled_not_requantized(hf, tmp_path, qtype, wmode, tiled, base):
    src = tmp_path / "m.gguf"
    write_gguf(hf, src, qtype)
    raw = reader_blocks(src)
    legacy, tiled_file = tmp_path / "l.vqf", tmp_path / "t.vqf"
    assert main(["convert", str(src), str(legacy), "--wmode", wmode, "--layout", "legacy"]) == 0
    assert main(["convert", str(src), str(tiled_file), "--wmode", wmode]) == 0
    for short, gg, (rows, cols) in (("q", "attn_q", (64, 64)), ("down", "ffn_down", (64, 128))):
        want = raw[f"blk.0.{gg}.weight"] + raw[f"blk.1.{gg}.weight"]
        with open_vqf(legacy) as vqf:
            assert bytes(vqf.payload(f"{wmode}_{short}")) == want  # the blocks, byte for byte
        with open_vqf(tiled_file) as vqf:
            payload = bytes(vqf.payload(f"{wmode}_{short}"))
        layer = payload[: len(payload) // 2]
        assert codec(tiled).untile(layer, rows, cols) == raw[f"blk.0.{gg}.weight"]
        got = codec(tiled).decode(layer, rows, cols)
        blocks = np.frombuffer(raw[f"blk.0.{gg}.weight"], dtype=np.uint8).reshape(rows, -1)
        oracle = dequantize(blocks, getattr(gguf.GGMLQuantizationType, qtype))
        assert np.array_equal(got.view(np.uint32), oracle.astype(np.float32).view(np.uint32))
    with open_vqf(legacy) as vqf:
        assert bytes(vqf.payload(f"{wmode}_lm")) == raw["output.weight"]
    assert main(["verify", "--engine-defaults", str(tiled_file)]) == 0


@pytest.mark.parametrize(("qtype", "wmode"), [("Q8_0", "q8"), ("Q4_0", "q4")])
def test_a_converted_gguf_equals_the_same_weights_imported_from_hf(hf, tmp_path, qtype, wmode):
    """The GGUF's dequantized weights, saved as a float32 checkpoint and imported, quantize back to
    the same blocks (each block keeps its extreme code), so both files and their logits agree."""
    src = tmp_path / "m.gguf"
    values = write_gguf(hf, src, qtype)
    folder = tmp_path / "deq"
    folder.mkdir()
    (folder / "config.json").write_text((hf / "config.json").read_text())
    save_file(values, str(folder / "model.safetensors"))
    a, b = tmp_path / "a.vqf", tmp_path / "b.vqf"
    assert main(["convert", str(src), str(a), "--wmode", wmode]) == 0
    assert main(["convert", str(folder), str(b), "--wmode", wmode]) == 0
    assert a.read_bytes() == b.read_bytes()
    got, want = logits(a), logits(b)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_blocks_of_another_type_need_requantize(hf, tmp_path, capsys):
    src = tmp_path / "m.gguf"
    write_gguf(hf, src, "Q4_0")
    out = tmp_path / "o.vqf"
    assert main(["convert", str(src), str(out), "--wmode", "q8"]) == 3
    assert "vqf.import.requantize" in capsys.readouterr().err and not out.exists()
    assert main(["convert", str(src), str(out), "--wmode", "q8", "--requantize"]) == 0
    with open_vqf(out) as vqf:
        q = codec("q8_0_8x8").decode(bytes(vqf.payload("q8_q"))[: 64 * 2 * 34], 64, 64)
    raw = reader_blocks(src)["blk.0.attn_q.weight"]
    deq = dequantize(np.frombuffer(raw, np.uint8).reshape(64, -1), gguf.GGMLQuantizationType.Q4_0)
    assert np.max(np.abs(q - deq)) <= np.max(np.abs(deq)) / 127  # requantized, within one step


def test_a_file_gguf_py_cannot_read_is_malformed(tmp_path, capsys):
    bad = tmp_path / "b.gguf"
    bad.write_bytes(b"GGUF" + bytes(12))
    assert main(["convert", str(bad), str(tmp_path / "b.vqf")]) == 1
    assert "vqf.import.gguf" in capsys.readouterr().err
