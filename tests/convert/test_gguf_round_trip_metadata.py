"""What a VQF <-> GGUF round trip keeps (issue 34 item 5, spec/vqf.md §converter).

* GGUF -> VQF writes the tokenizer sidecar from the GGUF's vocabulary and merges, and the chat
  template sidecar from `tokenizer.chat_template`, so `run --prompt` works on the result. The
  tokenizer is checked against the original one (a Qwen2-style byte-level BPE trained here with
  the `tokenizers` library: NFC, the Qwen2 split, byte-level, added special and non-special
  tokens) on strings with contractions, digits, CJK, emoji, newlines and special tokens.
* VQF -> GGUF writes `tokenizer.chat_template`, `general.file_type` and
  `general.quantization_version`, read back with gguf-py's reader and compared with gguf-py's own
  `LlamaFileType` members and `GGML_QUANT_VERSION`.
* GGUF -> VQF without --wmode takes the weight mode of the GGUF's blocks: a Q4_0 file becomes q4
  (copied, no --requantize), a Q8_0 file q8.
* A dual VQF is refused by the export unless --wmode q4|q8 chooses the set; a g256 file exports
  its Q8_0 blocks and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.examples import TINY_ARCH, example_state_dict
from weightfile.frontend.chat import chat_template_path
from weightfile.frontend.tokenizer import sidecar_path

gguf = pytest.importorskip("gguf", reason="GGUF conversion needs gguf-py")
tokenizers = pytest.importorskip("tokenizers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

ARCH = {**TINY_ARCH, "vocab_size": 512}
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PLAIN = ["<think>", "</think>"]  # Qwen3's: added, not special
STRINGS = [
    "Hello world, it's 2026! I'll say: don't PANIC.",
    "<|im_start|>user\ncafé naïve 数字 123456 🙂<|im_end|>\n",
    "  indented\tline\n\n\nend   ",
    "<think>a b</think><|endoftext|>x",
]
#: The Qwen2 pre-tokenizer split, written out here from Qwen2's published tokenizer.json (not
#: taken from the module under test).
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def qwen2_style_tokenizer():
    from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    tok.decoder = decoders.ByteLevel()
    corpus = [*STRINGS, "the quick brown fox jumps over the lazy dog 0123456789"] * 40
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(corpus, trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in PLAIN])
    return tok


@pytest.fixture(scope="module")
def hf(tmp_path_factory) -> Path:
    """A Qwen3 checkpoint folder (the example's weights, vocabulary 512) with its tokenizer."""
    folder = tmp_path_factory.mktemp("hf")
    a = ARCH
    config = {
        "model_type": "qwen3", "vocab_size": a["vocab_size"], "hidden_size": a["dim"],
        "intermediate_size": a["ffn_dim"], "num_hidden_layers": a["n_layers"],
        "num_attention_heads": a["n_heads"], "num_key_value_heads": a["n_kv_heads"],
        "head_dim": a["head_dim"], "rope_theta": a["rope_theta"], "rms_norm_eps": a["norm_eps"],
        "max_position_embeddings": a["max_seq_len"], "bos_token_id": 1, "eos_token_id": 2,
        "tie_word_embeddings": False,
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    safetensors_numpy.save_file(example_state_dict(ARCH), str(folder / "model.safetensors"))
    qwen2_style_tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    return folder


def convert(*argv: str) -> int:
    return main(["convert", *map(str, argv), "--quiet"])


def meta(path: Path) -> dict:
    r = gguf.GGUFReader(str(path))
    return {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}


def projection_types(path: Path) -> set[str]:
    r = gguf.GGUFReader(str(path))
    matrices = [t for t in r.tensors if t.name.startswith("blk.") and len(t.shape) == 2]
    return {t.tensor_type.name for t in matrices}


@pytest.mark.parametrize(("wmode", "file_type"), [("q4", "MOSTLY_Q4_0"), ("q8", "MOSTLY_Q8_0")])
def test_round_trip_keeps_weights_tokenizer_and_template(hf, tmp_path, capsys, wmode, file_type):
    src, mid, back = tmp_path / "m.vqf", tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert convert(hf, src, "--wmode", wmode) == 0
    assert chat_template_path(src).read_text() == TEMPLATE
    assert convert(src, mid) == 0
    m = meta(mid)
    assert m["general.file_type"] == gguf.LlamaFileType[file_type].value
    assert m["general.quantization_version"] == gguf.GGML_QUANT_VERSION
    assert m["tokenizer.chat_template"] == TEMPLATE
    capsys.readouterr()
    assert convert(mid, back) == 0  # no --wmode: the GGUF's blocks choose it
    assert f"wmode {wmode}," in capsys.readouterr().out
    assert back.read_bytes() == src.read_bytes()
    assert chat_template_path(back).read_text() == TEMPLATE
    original = qwen2_style_tokenizer()
    rebuilt = tokenizers.Tokenizer.from_file(str(sidecar_path(back)))
    for text in STRINGS:
        ids = original.encode(text).ids
        assert rebuilt.encode(text).ids == ids, text
        assert rebuilt.decode(ids, skip_special_tokens=False) == original.decode(
            ids, skip_special_tokens=False
        )
    for t in SPECIAL + PLAIN:
        assert rebuilt.token_to_id(t) == original.token_to_id(t), t
    capsys.readouterr()
    prompt = ["run", "--prompt", STRINGS[0], "--max-tokens", "3", "--engine", "fast"]
    assert main([prompt[0], str(src), *prompt[1:]]) == 0
    want = capsys.readouterr().out
    assert main([prompt[0], str(back), *prompt[1:]]) == 0
    assert capsys.readouterr().out == want


def test_a_q4_0_gguf_becomes_q4_without_requantize(hf, tmp_path, capsys):
    src, mid, back = tmp_path / "m.vqf", tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert convert(hf, src, "--wmode", "q4", "--layout", "legacy") == 0
    assert convert(src, mid) == 0
    assert projection_types(mid) == {"Q4_0"}
    capsys.readouterr()
    assert convert(mid, back, "--layout", "legacy") == 0
    assert "wmode q4" in capsys.readouterr().out
    assert back.read_bytes() == src.read_bytes()


def test_a_dual_file_exports_only_the_set_it_is_told(hf, tmp_path, capsys):
    dual = tmp_path / "dual.vqf"
    assert convert(hf, dual, "--wmode", "dual") == 0
    capsys.readouterr()
    assert convert(dual, tmp_path / "none.gguf") == 3
    err = capsys.readouterr().err
    assert "vqf.import.option" in err and "dual" in err and "--wmode q8 or --wmode q4" in err
    assert not (tmp_path / "none.gguf").exists()
    for wmode, kind, ftype in (("q8", "Q8_0", "MOSTLY_Q8_0"), ("q4", "Q4_0", "MOSTLY_Q4_0")):
        out = tmp_path / f"{wmode}.gguf"
        assert convert(dual, out, "--wmode", wmode) == 0
        assert projection_types(out) == {kind}
        assert meta(out)["general.file_type"] == gguf.LlamaFileType[ftype].value
    q8 = tmp_path / "q8.vqf"
    assert convert(hf, q8, "--wmode", "q8") == 0
    capsys.readouterr()
    assert convert(q8, tmp_path / "x.gguf", "--wmode", "q4") == 3
    assert "holds only the q8_* projections" in capsys.readouterr().err
    assert convert(q8, tmp_path / "x.gguf", "--wmode", "g256") == 2  # not a projection set


def test_a_g256_file_exports_q8_0_blocks_and_says_so(hf, tmp_path, capsys):
    g256, out = tmp_path / "g.vqf", tmp_path / "g.gguf"
    assert convert(hf, g256, "--wmode", "g256") == 0
    capsys.readouterr()
    assert convert(g256, out) == 0
    said = capsys.readouterr().out
    assert "note: the g256 matrices are written as GGUF Q8_0 blocks" in said
    assert "--requantize" in said
    assert projection_types(out) == {"Q8_0"}
    assert meta(out)["general.file_type"] == gguf.LlamaFileType.MOSTLY_Q8_0.value
    # the same values: every exported Q8_0 block decodes as the g256 file's matrix
    from gguf.quants import dequantize

    from weightfile.ref.codecs.vqf import codec
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.codecs.vqf.registry import codec_for

    t = next(t for t in gguf.GGUFReader(str(out)).tensors if t.name == "blk.0.attn_q.weight")
    with open_vqf(g256) as vqf:
        e = vqf.entry("q8_q")
        layout = codec_for(e.qtype, vqf.header.flags, e.name, shape=(64, 64))
        ours = codec(layout).decode(bytes(vqf.payload(e))[: e.bytes // 2], 64, 64)
    assert np.array_equal(dequantize(np.asarray(t.data), t.tensor_type), ours)


def test_a_moe_gguf_gets_its_mode_and_tokenizer_back(tmp_path, capsys):
    """The qwen3moe importer: Q4_0 experts -> q4 without --wmode, the same bytes, a sidecar."""
    from weightfile.bench.synthetic import synthetic_model

    src, _ = synthetic_model("tiny-moe-q4_0", tmp_path / "cache")
    qwen2_style_tokenizer().save(str(sidecar_path(src)))
    mid, back = tmp_path / "m.gguf", tmp_path / "back.vqf"
    assert convert(src, mid) == 0
    capsys.readouterr()
    assert convert(mid, back) == 0
    assert "[gguf/qwen3moe -> vqf, wmode q4," in capsys.readouterr().out
    assert back.read_bytes() == src.read_bytes()
    rebuilt = tokenizers.Tokenizer.from_file(str(sidecar_path(back)))
    original = qwen2_style_tokenizer()
    assert [rebuilt.encode(t).ids for t in STRINGS] == [original.encode(t).ids for t in STRINGS]


@pytest.mark.parametrize(
    ("model", "pre", "why"),
    [("llama", "default", "not a byte-level BPE"), ("gpt2", "llama-bpe", "pre-tokenizer")],
)
def test_a_vocabulary_that_would_split_differently_gives_no_sidecar(model, pre, why):
    from weightfile.convert.gguf_tokenizer import tokenizer_json

    meta = {"tokenizer.ggml.model": model, "tokenizer.ggml.pre": pre,
            "tokenizer.ggml.tokens": ["a", "b"], "tokenizer.ggml.token_type": [1, 1]}  # fmt: skip
    text, reason = tokenizer_json(meta)
    assert text is None and why in reason
