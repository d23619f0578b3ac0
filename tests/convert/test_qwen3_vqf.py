"""`weightfile import`: a tiny random transformers Qwen3 -> VQF -> the reference decoder.

The oracle is transformers itself (eager attention, float32): the f32 import must give its
logits within 1e-5 and the same argmax at every position; the q8_0 / q4_0 imports bind and run,
and stay close to it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.convert.checkpoint import Checkpoint
from weightfile.families.qwen3.hf import config_from_hf, weights_from_state_dict
from weightfile.families.qwen3.hf_names import (
    EMBED,
    FINAL_NORM,
    LAYER_TENSORS,
    LM_HEAD,
    layer_tensor,
)
from weightfile.families.qwen3.to_vqf import RULES, import_checkpoint, tokenizer_sidecar
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import NotFoundError, UnsupportedError
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

torch = pytest.importorskip("torch", reason="the import check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="the import check needs the 'external' extra (transformers)"
)

SIZES = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)
TOKENS = [3, 141, 59, 26, 5, 200, 97, 9]


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def checkpoint(request, tmp_path_factory):
    tied = request.param
    torch.manual_seed(7)
    cfg = transformers.Qwen3Config(
        **SIZES,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=tied,
        attn_implementation="eager",
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    folder = tmp_path_factory.mktemp("hf")
    model.save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"marker": 1}')
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits[0].numpy()
    return folder, logits


def reference_logits(path) -> np.ndarray:
    with open_vqf(path) as vqf:
        config, weights = bind_vqf(vqf)
    model = Qwen3Model(config, weights)
    return model.forward(TOKENS, model.new_cache())


def test_f32_import_matches_transformers(checkpoint, tmp_path):
    folder, want = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.vqf", qtype="f32")
    got = reference_logits(out)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.max(np.abs(got - want)) <= 1e-5
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert tokenizer_sidecar(out).read_text() == '{"marker": 1}'


@pytest.mark.parametrize(("qtype", "layout", "bound"), [
    ("f16", "legacy", 0.002), ("q8_0", "legacy", 0.03), ("q8_0", "tiled", 0.03),
    ("q4_0", "tiled", 0.3), ("q4_0", "legacy", 0.3),
])  # fmt: skip
def test_quantized_imports_load_and_run(checkpoint, tmp_path, qtype, layout, bound):
    folder, want = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.vqf", qtype=qtype, layout=layout)
    got = reference_logits(out)
    assert np.isfinite(got).all() and got.shape == want.shape
    err = np.max(np.abs(got - want))
    assert 0 < err <= bound  # quantization moves the logits, but only so far


def test_arch_comes_from_config(checkpoint, tmp_path):
    folder, _ = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.vqf", qtype="q8_0")
    with open_vqf(out) as vqf:
        arch = vqf.header.arch
    assert (arch["dim"], arch["n_layers"], arch["vocab_size"]) == (64, 2, 256)
    assert (arch["n_heads"], arch["n_kv_heads"], arch["head_dim"], arch["ffn_dim"]) == (
        4,
        2,
        16,
        128,
    )
    assert (arch["bos_id"], arch["eos_id"], arch["has_q_norm"]) == (1, 2, 1)
    assert arch["rope_theta"] == 10000.0


def test_cli_import(checkpoint, tmp_path, capsys):
    folder, _ = checkpoint
    out = tmp_path / "c.vqf"
    assert main(["import", str(folder), str(out), "--qtype", "q4_0", "--layout", "tiled"]) == 0
    assert out.exists() and tokenizer_sidecar(out).exists()
    assert main(["verify", str(out)]) == 0
    ref = tmp_path / "r.vqf"
    assert main(["import", str(folder), str(ref), "--qtype", "q4_0", "--layout", "tiled",
                 "--engine", "ref"]) == 0  # fmt: skip
    assert ref.read_bytes() == out.read_bytes()  # the fast codecs write the reference's bytes
    assert main(["import", str(tmp_path / "nowhere"), str(tmp_path / "d.vqf")]) == 4
    assert "vqf.import.missing_file" in capsys.readouterr().err
    assert not (tmp_path / "d.vqf").exists()


def test_cli_import_encrypted_and_signed(checkpoint, tmp_path, capsys, monkeypatch):
    """import --encrypt --sign-key publishes only the protected file; it decrypts to the plain
    import byte for byte (spec/vqf.md §protected)."""
    folder, _ = checkpoint
    monkeypatch.delenv("VLLM_VQF_KEY", raising=False)
    pw, key = tmp_path / "pw", tmp_path / "key"
    pw.write_bytes(b"import secret\n")
    assert main(["keygen", "--out", str(key)]) == 0
    pub = capsys.readouterr().out.strip()
    plain = tmp_path / "p.vqf"
    assert main(["import", str(folder), str(plain), "--qtype", "q8_0"]) == 0
    dest = tmp_path / "out"
    dest.mkdir()
    out = dest / "m.vqf"
    assert main(["import", str(folder), str(out), "--qtype", "q8_0", "--encrypt",
                 "--passphrase-file", str(pw), "--sign-key", str(key)]) == 0  # fmt: skip
    assert "encrypted, signed" in capsys.readouterr().out
    assert sorted(p.name for p in dest.iterdir()) == ["m.vqf", "m.vqf.tokenizer.json"]
    with open_vqf(out) as vqf:
        assert vqf.header.encrypted and vqf.header.signed
    assert main(["verify", str(out), "--passphrase-file", str(pw), "--sign-pub", pub]) == 0
    back = tmp_path / "back.vqf"
    assert main(["decrypt", str(out), str(back), "--passphrase-file", str(pw)]) == 0
    assert back.read_bytes() == plain.read_bytes()
    monkeypatch.setenv("VLLM_VQF_KEY", "import secret")  # the engine's variable, as for encrypt
    env = dest / "env.vqf"
    assert main(["import", str(folder), str(env), "--qtype", "q8_0", "--encrypt"]) == 0
    back.unlink()
    assert main(["decrypt", str(env), str(back)]) == 0
    assert back.read_bytes() == plain.read_bytes()
    signed = dest / "s.vqf"
    assert main(["import", str(folder), str(signed), "--qtype", "q8_0",
                 "--sign-key", str(key)]) == 0  # fmt: skip
    with open_vqf(signed) as vqf:
        assert not vqf.header.encrypted and vqf.header.signed
    capsys.readouterr()
    before = sorted(p.name for p in dest.iterdir())
    monkeypatch.delenv("VLLM_VQF_KEY")
    with pytest.raises(SystemExit) as no_key:  # no passphrase: refused before converting
        main(["import", str(folder), str(dest / "n.vqf"), "--encrypt"])
    assert no_key.value.code == 2 and "VLLM_VQF_KEY" in capsys.readouterr().err
    (tmp_path / "bad").write_text("not a key\n")
    assert main(["import", str(folder), str(dest / "n.vqf"), "--sign-key",
                 str(tmp_path / "bad")]) == 1  # fmt: skip
    assert "vqf.sig.key" in capsys.readouterr().err
    assert main(["import", str(folder), str(out), "--encrypt", "--passphrase-file", str(pw)]) == 2
    assert "vqf.writer.destination" in capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == before  # nothing new, nothing staged
    assert main(["import", str(folder), str(tmp_path / "m.ninfer"), "--encrypt"]) == 2


def test_the_checkpoint_reader_is_a_state_dict(checkpoint, tmp_path):
    """weights_from_state_dict over the lazy reader gives the f32 file's logits, bit for bit."""
    folder, _ = checkpoint
    config = config_from_hf(json.loads((folder / "config.json").read_text()))
    with Checkpoint(folder, RULES) as sd:
        model = Qwen3Model(config, weights_from_state_dict(sd, config.num_hidden_layers))
    got = model.forward(TOKENS, model.new_cache())
    want = reference_logits(import_checkpoint(folder, tmp_path / "m.vqf", qtype="f32"))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_no_checkpoint_is_a_typed_error(tmp_path):
    with pytest.raises(NotFoundError) as e:
        import_checkpoint(tmp_path, tmp_path / "o.vqf")
    assert e.value.rule == "vqf.import.missing_file"
    (tmp_path / "config.json").write_text(json.dumps(SIZES))
    with pytest.raises(NotFoundError) as e:  # a config but no *.safetensors
        import_checkpoint(tmp_path, tmp_path / "o.vqf")
    assert e.value.rule == "vqf.import.missing_file" and e.value.path == "."


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [("qtype", "q5_k", "vqf.import.qtype"), ("layout", "8x8", "vqf.import.layout")],
)
def test_an_unknown_qtype_or_layout_is_refused_before_reading(tmp_path, option, value, rule):
    """The API refuses what the CLI's choices cannot express, before it looks for a checkpoint."""
    with pytest.raises(UnsupportedError) as e:
        import_checkpoint(tmp_path, tmp_path / "o.vqf", **{option: value})
    assert (e.value.rule, e.value.path) == (rule, option)
    assert not (tmp_path / "o.vqf").exists()


def test_reference_precision_files_are_outside_the_engine_inventory(checkpoint, tmp_path, capsys):
    folder, _ = checkpoint
    out = import_checkpoint(folder, tmp_path / "f.vqf", qtype="f32")
    assert main(["verify", str(out)]) == 1  # F32 projections: the strict validator says so
    captured = capsys.readouterr()
    assert "qtype" in captured.out + captured.err


def dense(m) -> np.ndarray:
    """A bound matrix's float32 values: Q words reconstructed exactly (spec/numerics.md
    §f32-weights)."""
    if isinstance(m, QuantMatrix):
        scale = m.scale_bits.view(np.float16).astype(np.float32).repeat(32, axis=1)
        return m.codes.astype(np.float32) * scale
    return np.asarray(m.values if isinstance(m, DenseMatrix) else m, dtype=np.float32)


@pytest.mark.parametrize("qtype", ["q8_0", "q4_0"])
def test_quantized_imports_match_transformers_on_their_dequantized_weights(
    checkpoint, tmp_path, qtype
):
    folder, _ = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.vqf", qtype=qtype, layout="tiled")
    with open_vqf(out) as vqf:
        config, weights = bind_vqf(vqf)
    assert isinstance(weights.layers[0].q_proj, QuantMatrix) and weights.lm_head is not None
    sd = {EMBED: weights.embed, FINAL_NORM: weights.final_norm, LM_HEAD: dense(weights.lm_head)}
    for i, lw in enumerate(weights.layers):
        sd |= {layer_tensor(i, f): dense(getattr(lw, f)) for f in LAYER_TENSORS}
    cfg = transformers.Qwen3Config(
        **SIZES,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False,
        attn_implementation="eager",
    )
    hf = transformers.Qwen3ForCausalLM(cfg).eval()
    hf.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=True)
    with torch.no_grad():
        want = hf(torch.tensor([TOKENS])).logits[0].numpy()
    f32w = Qwen3Model(config, weights, CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS))
    got = f32w.forward(TOKENS, f32w.new_cache())
    assert np.abs(got - want).max() <= 1e-5  # same weights: only float rounding differs
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    # engine style adds the activation rounding of spec/numerics.md §q8-activation (each input moves
    # by at most amax/254 of its block, 0.4 %), so the logits move by about that fraction of their
    # size
    eng = Qwen3Model(config, weights)
    act = eng.forward(TOKENS, eng.new_cache())
    assert 1e-5 < np.abs(act - want).max() <= 0.02 * np.abs(want).max()
