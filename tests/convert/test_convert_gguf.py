"""`weightfile convert MODEL.gguf OUT.vqf`: GGUF files written by gguf-py (GGUFWriter,
gguf.quants.quantize) from a tiny transformers checkpoint, converted and compared tensor by
tensor with gguf.quants — the raw blocks and the dequantized values — and against the same
weights imported from Hugging Face (spec/vqf.md §converter).
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


#: Byte offsets of the f16 scale fields of one 256-element K-quant super-block (ggml's
#: block_q4_K / q5_K: d, dmin first; block_q6_K: d last), set finite in hand-made blocks.
K_SCALES = {"Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def k_blocks(rows: int, cols: int, qtype: str, seed: int = 3) -> np.ndarray:
    """Random K-quant blocks [rows, bytes per row] with finite small scales (gguf.quants has no
    K-quant encoder, only the decoder the test compares with)."""
    q = getattr(gguf.GGMLQuantizationType, qtype)
    block, size = gguf.GGML_QUANT_SIZES[q]
    raw = np.random.default_rng(seed).integers(0, 256, (rows, cols // block, size), np.uint8)
    for at in K_SCALES[qtype]:
        raw[:, :, at : at + 2] = np.frombuffer(np.float16(0.002).tobytes(), np.uint8)
    return raw.reshape(rows, -1)


def write_gguf(
    hf: Path, out: Path, qtype: str, kquant: dict[str, str] | None = None
) -> dict[str, np.ndarray]:
    """The llama.cpp qwen3 layout of the checkpoint; returns the dequantized weights by HF name.
    `kquant` maps HF names to a K-quant type written instead, as random blocks (k_blocks)."""
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
        elif kquant and name in kquant:
            k = getattr(gguf.GGMLQuantizationType, kquant[name])
            blocks = k_blocks(*v.shape, kquant[name])
            w.add_tensor(gguf_name(name), blocks, raw_dtype=k)
            values[name] = dequantize(blocks, k).astype(np.float32)
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


@pytest.mark.parametrize(("qtype", "wmode", "layout"), [
    ("Q8_0", "q8", "tiled"), ("Q4_0", "q4", "tiled"), ("Q4_0", "q4", "legacy"),
    ("Q8_0", "dual", "tiled"),
])  # fmt: skip
def test_gguf_to_vqf_to_gguf_keeps_every_projection_block(hf, tmp_path, qtype, wmode, layout):
    src, mid, back = tmp_path / "m.gguf", tmp_path / "m.vqf", tmp_path / "b.gguf"
    write_gguf(hf, src, qtype)
    options = ["--wmode", wmode, "--layout", layout] + ["--requantize"] * (wmode == "dual")
    assert main(["convert", str(src), str(mid), *options]) == 0
    # a dual file exports the set it is told (issue 34 item 5): its q8 set holds the copied blocks
    assert main(["convert", str(mid), str(back), *["--wmode", "q8"] * (wmode == "dual")]) == 0
    first = {t.name: t for t in gguf.GGUFReader(str(src)).tensors}
    second = {t.name: t for t in gguf.GGUFReader(str(back)).tensors}
    assert sorted(first) == sorted(second)
    for name, t in first.items():
        if name == "token_embd.weight":
            continue  # VQF keeps the embedding as F16 flushed to zero (spec/vqf.md §f16)
        u = second[name]
        assert (u.tensor_type, u.shape.tolist()) == (t.tensor_type, t.shape.tolist()), name
        assert np.asarray(u.data).tobytes() == np.asarray(t.data).tobytes(), name


def test_the_gguf_export_carries_llama_cpp_metadata_and_the_tokenizer(hf, tmp_path):
    from tokenizers import Tokenizer, models

    vqf, out = tmp_path / "m.vqf", tmp_path / "m.gguf"
    assert main(["convert", str(hf), str(vqf), "--wmode", "q4"]) == 0
    vocab = {f"t{i}": i for i in range(250)} | {"t": 250, "0": 251}
    Tokenizer(models.BPE(vocab=vocab, merges=[("t", "0")])).save(str(vqf) + ".tokenizer.json")
    assert main(["convert", str(vqf), str(out)]) == 0
    r = gguf.GGUFReader(str(out))
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
    assert meta["general.architecture"] == "qwen3"
    assert (meta["qwen3.embedding_length"], meta["qwen3.block_count"]) == (64, 2)
    assert (meta["qwen3.attention.head_count"], meta["qwen3.attention.head_count_kv"]) == (4, 2)
    assert (meta["qwen3.feed_forward_length"], meta["qwen3.attention.key_length"]) == (128, 16)
    assert meta["qwen3.rope.freq_base"] == 10000.0
    assert (meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"]) == (1, 2)
    assert meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.merges"] == ["t 0"]
    tokens = meta["tokenizer.ggml.tokens"]
    assert len(tokens) == 256 and tokens[7] == "t7" and tokens[252] == "[PAD252]"
    assert {t.name for t in r.tensors} >= {
        "token_embd.weight",
        "output.weight",
        "blk.1.ffn_down.weight",
    }


@pytest.fixture(scope="module")
def hf256(tmp_path_factory) -> Path:
    """A model whose down_proj rows are 256 wide: one K-quant super-block."""
    torch.manual_seed(6)
    cfg = transformers.Qwen3Config(
        vocab_size=64, hidden_size=64, intermediate_size=256, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("hf256")
    transformers.Qwen3ForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["Q4_K", "Q5_K", "Q6_K"])
def test_k_quant_tensors_are_refused_by_name_then_requantized_with_the_flag(
    hf256, tmp_path, capsys, kind
):
    src = tmp_path / "k.gguf"
    down = "model.layers.0.mlp.down_proj.weight"
    values = write_gguf(hf256, src, "Q8_0", kquant={down: kind})
    out = tmp_path / "o.vqf"
    argv = ["convert", str(src), str(out), "--wmode", "q8", "--layout", "legacy", "--quiet"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "vqf.import.requantize" in err and f"blk.0.ffn_down.weight is {kind}" in err
    assert not out.exists()
    assert main([*argv, "--requantize"]) == 0
    with open_vqf(out) as vqf:
        got = codec("q8_0").decode(bytes(vqf.payload("q8_down")), 64, 256)
        q = codec("q8_0").decode(bytes(vqf.payload("q8_q")), 64, 64)
    want = values[down]
    assert np.abs(want).max() > 0
    # requantized to Q8_0: within one step of each 32-block's own scale (absmax / 127; half a
    # step of rounding plus the f16 rounding of the scale itself)
    step = np.abs(want.reshape(64, -1, 32)).max(axis=2, keepdims=True) / 127
    assert np.all(np.abs(got.reshape(64, -1, 32) - want.reshape(64, -1, 32)) <= step + 1e-7)
    # the Q8_0 tensors beside it are still copied, not requantized
    blocks = reader_blocks(src)["blk.0.attn_q.weight"]
    assert np.array_equal(q, dequantize(np.frombuffer(blocks, np.uint8).reshape(64, -1),
                                        gguf.GGMLQuantizationType.Q8_0))  # fmt: skip


@pytest.mark.parametrize(
    ("arch", "words"),
    [("qwen3vl", "mmproj (clip)"), ("clip", "mmproj (clip)")],
)  # fmt: skip
def test_vision_gguf_sources_are_refused_saying_why(tmp_path, capsys, arch, words):
    src = tmp_path / f"{arch}.gguf"
    w = gguf.GGUFWriter(str(src), arch)
    w.add_block_count(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = tmp_path / "o.vqf"
    assert main(["convert", str(src), str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "vqf.import.source" in err and words in err and not out.exists()


def test_vision_vqf_files_do_not_export_to_gguf_saying_why(tmp_path, capsys):
    from tests.strategies.qwen3_vl import shared_vqf

    out = tmp_path / "vl.gguf"
    assert main(["convert", str(shared_vqf()), str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "vqf.import.source" in err and "VISION file" in err and not out.exists()


@pytest.mark.parametrize("fmt", ["q8_0", "q8_0_8x8", "q4_0", "q4_0_4x4"])
def test_a_moe_file_exports_as_qwen3moe_with_every_expert_block_copied(tmp_path, fmt):
    from tests.strategies.tiny_moe import MoeSpec, moe_config, write_moe_file
    from weightfile.spec.codecs.vqf.registry import codec_for

    # d 64, Ie 32, E 3: no axis equals another, so a transposed or misgrouped expert shows
    ne, ie, d, nl = 3, 32, 64, 2
    cfg = moe_config(hidden=64, experts=ne, moe_ffn=ie, layers=nl, top_k=2, vocab=48)
    src = write_moe_file(tmp_path / "m.vqf", MoeSpec(cfg, fmt, "none", 2))
    out = tmp_path / "m.gguf"
    assert main(["convert", str(src), str(out), "--quiet"]) == 0
    r = gguf.GGUFReader(str(out))
    meta = {k: f.contents() for k, f in r.fields.items() if k.startswith(("general.", "qwen3"))}
    assert meta["general.architecture"] == "qwen3moe"
    assert (meta["qwen3moe.expert_count"], meta["qwen3moe.expert_used_count"]) == (ne, 2)
    assert meta["qwen3moe.expert_feed_forward_length"] == ie
    got = {t.name: t for t in r.tensors}
    with open_vqf(src) as vqf:
        flags = vqf.header.flags
        family = "q4" if fmt.startswith("q4") else "q8"
        router = np.frombuffer(bytes(vqf.payload("moe_router")), np.float32).reshape(nl, ne, d)
        for i in range(nl):
            t = got[f"blk.{i}.ffn_gate_inp.weight"]
            assert t.shape.tolist() == [d, ne] and np.array_equal(np.asarray(t.data), router[i])
            for role, (rows, cols) in (("gate", (ne * ie, d)), ("down", (d, ne * ie))):
                e = vqf.entry(f"{family}_{role}")
                step = e.bytes // nl
                layout = codec_for(e.qtype, flags, e.name, shape=(rows, cols))
                ours = codec(layout).decode(bytes(vqf.payload(e))[i * step : (i + 1) * step],
                                            rows, cols)  # fmt: skip
                t = got[f"blk.{i}.ffn_{role}_exps.weight"]
                # ggml order: ne0 the row length; gate [d, Ie, E], down [Ie, d, E]
                assert t.shape.tolist() == ([d, ie, ne] if role == "gate" else [ie, d, ne])
                theirs = dequantize(np.asarray(t.data), t.tensor_type)
                for x in range(ne):
                    want = (
                        ours[x * ie : (x + 1) * ie]
                        if role == "gate"
                        else ours[:, x * ie : (x + 1) * ie]
                    )
                    assert np.array_equal(theirs[x], want), (role, i, x)  # fmt: skip


@pytest.mark.parametrize("wmode", ["q4i", "g256", "f32", "f16"])
def test_the_other_weight_modes_from_gguf_and_back(hf, tmp_path, capsys, wmode):
    """GGUF (Q8_0) -> VQF in the weight modes the other tests do not cover. Q4I8 and G256 blocks
    are Q8_0-shaped but constrained (codes in [-8, 7]; one scale per 256 elements, spec/vqf.md
    §q4i8, §g256), so arbitrary Q8_0 blocks cannot be copied into them, and F32/F16 entries are
    no blocks at all: --requantize is needed, and the file equals the import of the GGUF's
    dequantized weights from a float32 checkpoint.
    Back to GGUF, q4i and g256 matrices are Q8_0 blocks that gguf.quants decodes to our values;
    the reference-precision files are refused."""
    src = tmp_path / "m.gguf"
    values = write_gguf(hf, src, "Q8_0")
    folder = tmp_path / "deq"
    folder.mkdir()
    (folder / "config.json").write_text((hf / "config.json").read_text())
    save_file(values, str(folder / "model.safetensors"))
    a, b, back = tmp_path / "a.vqf", tmp_path / "b.vqf", tmp_path / "back.gguf"
    argv = ["convert", str(src), str(a), "--wmode", wmode, "--quiet"]
    assert main(argv) == 3  # f32/f16 too: any decoding of blocks is asked for explicitly
    assert "vqf.import.requantize" in capsys.readouterr().err
    assert main([*argv, "--requantize"]) == 0
    assert main(["convert", str(folder), str(b), "--wmode", wmode, "--quiet"]) == 0
    assert a.read_bytes() == b.read_bytes()
    capsys.readouterr()
    if wmode in ("f32", "f16"):
        assert main(["convert", str(a), str(back), "--quiet"]) == 3
        assert "only quantized files export" in capsys.readouterr().err and not back.exists()
        return
    assert main(["convert", str(a), str(back), "--quiet"]) == 0
    from weightfile.spec.codecs.vqf.registry import codec_for

    t = next(t for t in gguf.GGUFReader(str(back)).tensors if t.name == "blk.0.attn_q.weight")
    assert t.tensor_type.name == "Q8_0"
    with open_vqf(a) as vqf:
        e = vqf.entry("q8_q")
        layout = codec_for(e.qtype, vqf.header.flags, e.name, shape=(64, 64))
        ours = codec(layout).decode(bytes(vqf.payload(e))[: e.bytes // 2], 64, 64)
    assert np.array_equal(dequantize(np.asarray(t.data), t.tensor_type), ours)
