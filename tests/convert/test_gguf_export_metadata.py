"""VQF -> GGUF metadata as llama.cpp's qwen3 loader reads it (spec/vqf.md §converter), read back
with gguf-py's own `GGUFReader`, on a model where the easy guesses are wrong: head_dim (32) is not
hidden / heads (64 / 4 = 16), and the tokenizer sidecar has added tokens of every kind.

Token types (gguf.TokenType: NORMAL 1, CONTROL 3, USER_DEFINED 4, UNUSED 5) follow llama.cpp's
convert_hf_to_gguf.py (ggml-org/llama.cpp, `TextModel.get_vocab_base` and
`ModelBase.does_token_look_special`): a BPE vocabulary token is NORMAL; an added token is CONTROL
when its `special` flag is set or it "looks special" (`<|...|>`, `<｜...｜>`, `<unused...>`, or one
of `<pad>`, `<mask>`, `<2mass>`, `[@BOS@]`), else USER_DEFINED with "▁" pre-normalized to a
space; an id no token names is UNUSED `[PAD<id>]`. The expected table below is written out by hand
from that rule, not computed by the exporter's helper.

llama.cpp's qwen3 loader takes `qwen3.attention.key_length` / `value_length` as the per-head
size of K and V (default n_embd / n_head when absent), so both must be head_dim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from weightfile.cli import main
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.read import open_vqf

gguf = pytest.importorskip("gguf", reason="GGUF export needs the 'external' extra (gguf)")
tokenizers = pytest.importorskip("tokenizers")

from tests.strategies.tiny_vqf import ModelSpec, write_model_file  # noqa: E402

BASE = 40  # BPE vocabulary ids 0..39; added tokens from 40
#: added token -> (its `special` flag, the GGUF text and type llama.cpp gives it)
ADDED = {
    "<|im_start|>": (True, "<|im_start|>", "CONTROL"),  # marked special
    "<tool>": (True, "<tool>", "CONTROL"),  # marked special, does not look it
    "<|im_sep|>": (False, "<|im_sep|>", "CONTROL"),  # not marked, looks special: <|...|>
    "<pad>": (False, "<pad>", "CONTROL"),  # not marked, on the look-special list
    "<unused3>": (False, "<unused3>", "CONTROL"),  # not marked, <unused...>
    "<think>": (False, "<think>", "USER_DEFINED"),  # Qwen3's <think>: special false
    "</think>": (False, "</think>", "USER_DEFINED"),
    "to\u2581do": (False, "to do", "USER_DEFINED"),  # "▁" written as a space
}


def tiny_file(tmp_path: Path, fmt: str) -> Path:
    config = Qwen3Config(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope_theta=10000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False,
    )  # fmt: skip
    path = write_model_file(tmp_path / "m.vqf", ModelSpec(config, fmt, True, 7))
    tok = tokenizers.Tokenizer(
        tokenizers.models.BPE(vocab={f"w{i}": i for i in range(BASE)}, merges=[])
    )
    for text, (special, _, _) in ADDED.items():
        tok.add_tokens([tokenizers.AddedToken(text, special=special, normalized=False)])
    tok.save(str(sidecar_path(path)))
    return path


@pytest.mark.parametrize("fmt", ["q8_0_8x8", "q4_0"])
def test_gguf_export_key_length_and_added_token_types_as_llama_cpp_reads_them(tmp_path, fmt):
    src, out, back = tiny_file(tmp_path, fmt), tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert main(["convert", str(src), str(out), "--quiet"]) == 0
    r = gguf.GGUFReader(str(out))
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
    assert (meta["qwen3.embedding_length"], meta["qwen3.attention.head_count"]) == (64, 4)
    assert meta["qwen3.attention.head_count_kv"] == 2
    assert meta["qwen3.attention.key_length"] == 32  # head_dim, not 64 / 4
    assert meta["qwen3.attention.value_length"] == 32
    q = next(t for t in r.tensors if t.name == "blk.0.attn_q.weight")
    assert q.shape.tolist() == [64, 4 * 32]  # ggml order: ne0 = hidden, ne1 = heads · head_dim

    tokens, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    T = gguf.TokenType
    assert len(tokens) == len(types) == 64
    for i in range(BASE):
        assert (tokens[i], types[i]) == (f"w{i}", T.NORMAL), i
    for i, (text, kind) in enumerate((t, k) for _, t, k in ADDED.values()):
        assert (tokens[BASE + i], types[BASE + i]) == (text, T[kind]), (BASE + i, text)
    for i in range(BASE + len(ADDED), 64):
        assert (tokens[i], types[i]) == (f"[PAD{i}]", T.UNUSED), i

    # and back: the GGUF importer reads head_dim from key_length
    wmode = "q4" if fmt.startswith("q4") else "q8"
    assert main(["convert", str(out), str(back), "--wmode", wmode, "--quiet"]) == 0
    with open_vqf(back) as vqf, open_vqf(src) as first:
        assert vqf.header.arch["head_dim"] == first.header.arch["head_dim"] == 32
        assert vqf.header.arch["n_heads"] == 4 and vqf.header.arch["dim"] == 64
