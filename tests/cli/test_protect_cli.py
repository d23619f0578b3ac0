"""`weightfile encrypt | decrypt | sign | keygen`, and the key options of the reading commands."""

from __future__ import annotations

from pathlib import Path

import pytest
from strategies.tiny_vqf import write_tiny_model

from weightfile.cli import main


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def keys(tmp_path, capsys):
    (tmp_path / "pw").write_bytes(b"board secret\n")  # the final newline is not part of it
    assert main(["keygen", "--out", str(tmp_path / "key")]) == 0
    pub = capsys.readouterr().out.strip()
    assert len(pub) == 128
    assert (tmp_path / "key").stat().st_mode & 0o777 == 0o600
    return tmp_path / "pw", tmp_path / "key", pub


def test_encrypt_sign_verify_decrypt(model, tmp_path, keys, capsys, monkeypatch):
    pw, key, pub = keys
    enc, signed, back = tmp_path / "e.vqf", tmp_path / "s.vqf", tmp_path / "d.vqf"
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 2
    assert main(["sign", str(enc), str(signed), "--sign-key", str(key),
                 "--passphrase-file", str(pw)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["verify", str(signed), "--passphrase-file", str(pw), "--sign-pub", pub]) == 0
    assert main(["verify", str(signed), "--passphrase-file", str(pw)]) == 3  # no trusted key
    assert "[vqf.sig.no_key]" in capsys.readouterr().out
    assert main(["verify", str(signed), "--sign-pub", pub]) == 3  # no passphrase
    assert "[vqf.enc.no_key]" in capsys.readouterr().out
    (tmp_path / "pub").write_text(pub + "\n")
    monkeypatch.setenv("VLLM_VQF_KEY", "board secret")  # the engine's variable
    assert main(["verify", str(signed), "--sign-pub", f"@{tmp_path / 'pub'}"]) == 0
    monkeypatch.setenv("VLLM_VQF_SIGN_PUB", pub)
    assert main(["verify", str(signed)]) == 0
    monkeypatch.setenv("VLLM_VQF_KEY", "wrong")
    assert main(["verify", str(signed)]) == 1
    assert "[vqf.enc.tag]" in capsys.readouterr().out
    assert main(["decrypt", str(enc), str(back), "--passphrase-file", str(pw)]) == 0
    assert back.read_bytes() == model.read_bytes()


def test_inspect_tells_the_tag_kind_and_loader_policy(model, tmp_path, keys, capsys):
    pw, _, _ = keys
    enc = tmp_path / "e.vqf"
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(enc), "--passphrase-file", str(pw)]) == 0
    out = capsys.readouterr().out
    assert "tag verified" in out and "writer kind" in out
    assert main(["inspect", str(enc)]) == 0
    assert "not checked (no passphrase)" in capsys.readouterr().out


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_run_on_an_encrypted_model_gives_the_plaintext_tokens(model, tmp_path, keys, capsys,
                                                              engine):  # fmt: skip
    pw, _, _ = keys
    enc = tmp_path / "e.vqf"
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    capsys.readouterr()
    ids = ["--token-ids", "5,17,3", "--max-tokens", "6", "--engine", engine,
           "--tokenizer", str(model) + ".tokenizer.json"]  # fmt: skip
    assert main(["run", str(model), *ids]) == 0
    want = capsys.readouterr().out
    assert main(["run", str(enc), *ids, "--passphrase-file", str(pw)]) == 0
    assert capsys.readouterr().out == want
    assert main(["run", str(enc), *ids]) == 3  # no passphrase: unverifiable, nothing decoded
    assert "vqf.enc.no_key" in capsys.readouterr().err


def test_dump_needs_the_passphrase(model, tmp_path, keys, capsys):
    pw, _, _ = keys
    enc = tmp_path / "e.vqf"
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    out = tmp_path / "t.npy"
    assert main(["dump", str(enc), "final_norm", "--out", str(out)]) == 3
    assert main(["dump", str(enc), "final_norm", "--out", str(out),
                 "--passphrase-file", str(pw)]) == 0  # fmt: skip


def test_an_encrypted_and_signed_file_without_keys_names_both(model, tmp_path, keys, capsys):
    """Issue 34 item 11: both keys are missing, so both are named (exit 3, never valid)."""
    pw, key, _ = keys
    enc, signed = tmp_path / "e.vqf", tmp_path / "s.vqf"
    assert main(["encrypt", str(model), str(enc), "--passphrase-file", str(pw)]) == 0
    assert main(["sign", str(enc), str(signed), "--sign-key", str(key),
                 "--passphrase-file", str(pw)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["verify", str(signed)]) == 3
    out = capsys.readouterr().out
    enc_rule, sig_rule = "vqf.enc.no_key", "vqf.sig.no_key"
    assert f"[{enc_rule}]" in out and f"[{sig_rule}]" in out
    assert "passphrase" in out and "public key" in out


def test_encrypt_sign_and_decrypt_carry_the_tokenizer_sidecars(model, tmp_path, keys, capsys):
    """Issue 34 item 11: `run --prompt` on the protected file finds its tokenizer."""
    pw, key, _ = keys
    src = tmp_path / "m.vqf"
    src.write_bytes(model.read_bytes())
    tok = tmp_path / "m.vqf.tokenizer.json"
    tok.write_bytes(Path(str(model) + ".tokenizer.json").read_bytes())
    (tmp_path / "m.vqf.chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    enc, signed, back = tmp_path / "e.vqf", tmp_path / "s.vqf", tmp_path / "d.vqf"
    assert main(["encrypt", str(src), str(enc), "--passphrase-file", str(pw)]) == 0
    assert "(+ e.vqf.tokenizer.json, e.vqf.chat_template.jinja)" in capsys.readouterr().out
    assert main(["sign", str(enc), str(signed), "--sign-key", str(key),
                 "--passphrase-file", str(pw)]) == 0  # fmt: skip
    assert main(["decrypt", str(enc), str(back), "--passphrase-file", str(pw)]) == 0
    for out in (enc, signed, back):
        assert Path(f"{out}.tokenizer.json").read_bytes() == tok.read_bytes()
        assert Path(f"{out}.chat_template.jinja").read_text() == "{{ messages[0]['content'] }}"
    capsys.readouterr()
    argv = ["run", str(signed), "--prompt", "hello", "--max-tokens", "2", "--passphrase-file",
            str(pw)]  # fmt: skip
    assert main(argv) == 0
