"""Issue 15, the rest of the surface: exit codes of our errors by the one table, help, the
bundled and corpus models run and trace, JSON documents of verify and inspect, dump's output."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import COMMAND_MODULES, EXAMPLES, build_parser, main
from weightfile.commands._common import EXIT_IO, EXIT_USAGE
from weightfile.examples import EXAMPLE_PATH

CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "corpus"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- exit codes --------------------------------------------------------------------------------
@pytest.mark.quick
def test_weightfile_alone_prints_the_help_exit_2(capsys):
    assert main([]) == EXIT_USAGE
    out = capsys.readouterr().out
    assert out.startswith("usage: weightfile") and "inspect" in out and "verify" in out


def test_every_command_has_an_example_and_shows_defaults(capsys):
    commands = [n.rsplit(".", 1)[1].replace("import_hf", "import") for n in COMMAND_MODULES]
    commands += ["encrypt", "decrypt", "sign", "keygen", "conformance run"]
    commands.remove("protect")
    assert set(commands) <= set(EXAMPLES)
    for command in commands:
        with pytest.raises(SystemExit) as exc:
            main([*command.split(), "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert f"example:\n  {EXAMPLES[command]}" in out, command
    build_parser().parse_args(["run", "m.vqf", "--token-ids", "1"])  # the parser stays usable
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 32)" in out and "(default: fast)" in out  # --max-tokens, --engine


@pytest.mark.quick
def test_a_synthetic_name_not_known_is_a_usage_error(tmp_path, capsys):
    assert main(["bench", "--synthetic", "nope", "--cache-dir", str(tmp_path)]) == EXIT_USAGE
    assert "[bench.synthetic.name]" in _one_line(capsys)


@pytest.mark.quick
def test_a_tensor_not_in_the_file_is_a_usage_error(tmp_path, capsys):
    assert main(["dump", str(EXAMPLE_PATH), "nope", "--out", str(tmp_path / "x")]) == EXIT_USAGE
    assert "no tensor named 'nope'" in _one_line(capsys)
    assert not (tmp_path / "x").exists()


def test_an_existing_destination_is_a_usage_error_naming_force(tmp_path, capsys):
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    out = tmp_path / "o.vqf"
    out.write_bytes(b"keep")
    argv = ["encrypt", str(EXAMPLE_PATH), str(out), "--passphrase-file", str(pw)]
    assert main(argv) == EXIT_USAGE
    line = _one_line(capsys)
    assert "--force" in line and "overwrite=True" not in line
    assert out.read_bytes() == b"keep"


def test_a_missing_tokenizer_file_is_exit_4(tmp_path, capsys):
    argv = ["run", str(EXAMPLE_PATH), "--prompt", "x", "--tokenizer", str(tmp_path / "no.json")]
    assert main(argv) == EXIT_IO
    assert str(tmp_path / "no.json") in _one_line(capsys)


# -- the bundled example and every corpus model run and trace ----------------------------------
def test_the_bundled_example_is_a_well_formed_model():
    import weightfile

    with weightfile.open(EXAMPLE_PATH) as f:
        for name in f:
            assert np.isfinite(f[name]).all(), name
        # unit norms, projections of standard deviation 1/sqrt(fan-in) (weightfile/examples.py)
        assert np.all(f["attn_norm"] == 1.0)
        q = f["q4_q"]
        assert 0.5 / 8 < float(q.std()) < 2.0 / 8  # fan-in 64: 1/8


ACCEPTED_MODELS = sorted(
    p.parent / json.loads(p.read_text())["model"]
    for p in CORPUS.glob("*/*/model/*/*/case.json")
    if json.loads(p.read_text())["expect"] == "accept"
)


def test_the_corpus_has_accepted_models_of_both_formats():
    kinds = {p.suffix for p in ACCEPTED_MODELS}
    assert kinds == {".vqf", ".ninfer"} and len(ACCEPTED_MODELS) >= 9


@pytest.mark.parametrize(
    "model",
    [EXAMPLE_PATH, *ACCEPTED_MODELS],
    ids=lambda p: str(p.relative_to(CORPUS)) if CORPUS in p.parents else p.name,
)
def test_run_and_trace_every_bundled_and_corpus_model(model, tmp_path, capsys):
    copy = tmp_path / model.name  # no sidecar tokenizer beside it: ids in, ids out
    shutil.copy(model, copy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning from a well-formed model
        assert main(["run", str(copy), "--token-ids", "1,2,3", "--max-tokens", "4"]) == 0
        words = capsys.readouterr().out.split()  # ids, or the words t0..t63 of ninfer3 v2
        assert 1 <= len(words) <= 4 and all(w.removeprefix("t").isdigit() for w in words)
        out = tmp_path / "t.npz"
        assert main(["trace", str(copy), "--token-ids", "1,2,3", "--out", str(out)]) == 0
    with np.load(out) as trace:
        assert trace["logits"].shape[0] == 3 and np.isfinite(trace["logits"]).all()


def test_the_example_does_not_generate_one_token_over_and_over(capsys):
    assert main(["run", str(EXAMPLE_PATH), "--token-ids", "1,2,3", "--max-tokens", "8"]) == 0
    assert len(set(capsys.readouterr().out.split())) > 1


@pytest.mark.parametrize("version", ["v2"])
def test_the_corpus_qwen35_models_carry_a_tokenizer_the_library_loads(version, capsys):
    for model in sorted(CORPUS.glob(f"ninfer3/{version}/model/qwen35/*/model.ninfer")):
        assert main(["run", str(model), "--prompt", "t1 t2 t3", "--max-tokens", "2"]) == 0
        words = capsys.readouterr().out.split()
        assert len(words) == 2 and all(w.startswith("t") for w in words), model


def test_a_tokenizer_given_skips_the_embedded_one(tmp_path, capsys):
    """ninfer3 v1's embedded tokenizer is one the installed library refuses; --tokenizer wins."""
    model = CORPUS / "ninfer3/v1/model/qwen35/dense-bf16/model.ninfer"
    assert main(["run", str(model), "--prompt", "x", "--max-tokens", "1"]) == 1
    assert "frontend.resource.invalid" in _one_line(capsys)
    from weightfile.families.qwen35.conformance_files import word_level_tokenizer

    tok = tmp_path / "tok.json"
    tok.write_bytes(word_level_tokenizer(64))
    argv = ["run", str(model), "--prompt", "t1 t2", "--max-tokens", "2", "--tokenizer", str(tok)]
    assert main(argv) == 0
    assert all(w.startswith("t") for w in capsys.readouterr().out.split())


# -- JSON documents ----------------------------------------------------------------------------
SHARED_KEYS = ["schema", "format", "path", "file_bytes"]


@pytest.mark.parametrize(
    "model", [EXAMPLE_PATH, CORPUS / "ninfer3/v2/model/qwen35/dense-bf16/model.ninfer"]
)
def test_verify_and_inspect_json_share_one_vocabulary(model, capsys):
    assert main(["verify", str(model), "--json"]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert main(["inspect", str(model), "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)
    assert verified["schema"] == "weightfile.verify/1"
    assert inspected["schema"] == "weightfile.inspect/1"
    for doc in (verified, inspected):
        assert list(doc)[:4] == SHARED_KEYS and "file_size" not in doc
        assert doc["file_bytes"] == model.stat().st_size
        assert doc["format"] == ("vqf" if model.suffix == ".vqf" else "ninfer3")
        assert doc["violations"] == []
    assert verified["status"] == "valid" and verified["valid"] is True


def test_inspect_shows_a_file_that_breaks_rules_with_its_violations(tmp_path, capsys):
    """A tensor whose range runs past the file (spec/vqf.md §loader-chain step 12) is shown, not
    refused."""
    import weightfile

    with weightfile.open_vqf(EXAMPLE_PATH) as vqf:
        last = vqf.entries[-1]
    data = bytearray(EXAMPLE_PATH.read_bytes())
    at = last.entry_offset + 48  # offset: after name[32], qtype, rows, cols, pad
    # (spec/vqf.md §entry)
    bad = tmp_path / "bad.vqf"
    data[at : at + 8] = (10**9).to_bytes(8, "little")
    bad.write_bytes(bytes(data))
    assert main(["verify", str(bad), "--json"]) == 1
    verified = json.loads(capsys.readouterr().out)
    assert main(["inspect", str(bad), "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)
    assert inspected["violations"] == verified["violations"] != []
    assert inspected["tensors"][-1]["name"] == "q4_lm"
    assert main(["inspect", str(bad)]) == 0
    assert "violation(s)" in capsys.readouterr().out


# -- dump --------------------------------------------------------------------------------------
def test_dump_writes_exactly_out(tmp_path, capsys):
    out = tmp_path / "x.txt"
    assert main(["dump", str(EXAMPLE_PATH), "attn_norm", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    assert np.load(out).shape == (2, 64)
    words = tmp_path / "w.bin"
    assert main(["dump", str(EXAMPLE_PATH), "q4_q", "--words", "--out", str(words)]) == 0
    assert sorted(np.load(words).files) == ["codes", "scales"]
    assert not (tmp_path / "w.bin.npz").exists()
    assert f"-> {out}" in capsys.readouterr().out


def test_dump_raw_extracts_a_resource(tmp_path):
    model = CORPUS / "ninfer3/v2/model/qwen35/dense-bf16/model.ninfer"
    out = tmp_path / "tokenizer.json"
    assert main(["dump", str(model), "r.tokenizer.json", "--raw", "--out", str(out)]) == 0
    from tokenizers import Tokenizer

    assert Tokenizer.from_file(str(out)).get_vocab_size() == 64


@pytest.mark.parametrize(
    "model", [EXAMPLE_PATH, CORPUS / "ninfer3/v2/model/qwen35/dense-q4-q8-fused/model.ninfer"]
)
def test_dump_all_exports_every_tensor_dequantized(model, tmp_path):
    from safetensors.numpy import load_file

    import weightfile

    out = tmp_path / "all.safetensors"
    assert main(["dump", str(model), "--all", "--out", str(out)]) == 0
    loaded = load_file(str(out))
    with weightfile.open(model) as f:
        expected = (
            f.names()
            if model.suffix == ".vqf"
            else [o.id for o in f.artifact.directory.objects if o.kind != "resource"]
        )
        assert sorted(loaded) == sorted(expected)
        for name in expected:
            np.testing.assert_array_equal(loaded[name], f.decode(name, engine="ref"))


@pytest.mark.parametrize("argv", [[], ["attn_norm", "--all"]])
def test_dump_takes_a_name_or_all(argv, tmp_path, capsys):
    assert main(["dump", str(EXAMPLE_PATH), *argv, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    assert "NAME, or --all" in _one_line(capsys)
