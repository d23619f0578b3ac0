"""`weightfile run` and `weightfile trace` on a tiny VQF with a BPE tokenizer sidecar."""

from __future__ import annotations

import numpy as np
import pytest
from strategies.tiny_vqf import write_tiny_model

from weightfile.cli import main
from weightfile.frontend.generate import stream_tokens
from weightfile.frontend.tokenizer import load_tokenizer, sidecar_path
from weightfile.ref.layers.sampling import generate
from weightfile.ref.qwen3.bind_vqf import bind_vqf
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.qwen3.trace import trace_names
from weightfile.ref.vqf.read import open_vqf


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("tiny"))


def reference(path) -> Qwen3Model:
    with open_vqf(path) as vqf:
        return Qwen3Model(*bind_vqf(vqf))


def test_trace_dumps_every_operation_and_the_logits(model_path, tmp_path, capsys):
    out = tmp_path / "t.npz"
    assert main(["trace", str(model_path), "--token-ids", "5,17,3,9", "--out", str(out)]) == 0
    model = reference(model_path)
    with np.load(out) as z:
        names = set(z.files)
        assert names == {*trace_names(model.config.num_hidden_layers), "input_ids"}
        assert z["input_ids"].tolist() == [5, 17, 3, 9]
        logits = z["logits"]
        assert logits.dtype == np.float32 and logits.shape == (4, model.config.vocab_size)
        want = model.forward([5, 17, 3, 9], model.new_cache())
        assert logits.view(np.uint32).tolist() == want.view(np.uint32).tolist()
        assert z["layers.1.q_rope"].shape == (4, model.config.q_dim)
        assert all(z[n].dtype == np.float32 for n in names - {"input_ids"})


def test_trace_of_a_prompt_uses_the_tokenizer(model_path, tmp_path):
    out = tmp_path / "p.npz"
    assert main(["trace", str(model_path), "--prompt", "the small line", "--out", str(out)]) == 0
    tok = load_tokenizer(sidecar_path(model_path))
    with np.load(out) as z:
        assert z["input_ids"].tolist() == tok.encode("the small line").ids


def test_run_streams_what_generate_produces(model_path, capsys):
    tok = load_tokenizer(sidecar_path(model_path))
    prompt = tok.encode("a line of text").ids
    want = generate(reference(model_path), prompt, 8, eos_id=0)
    assert main(["run", str(model_path), "--prompt", "a line of text", "--max-tokens", "8"]) == 0
    assert capsys.readouterr().out == tok.decode(want) + "\n"
    args = ["run", str(model_path), "--token-ids", ",".join(map(str, prompt)), "--max-tokens", "8"]
    assert main(args) == 0
    assert capsys.readouterr().out == tok.decode(want) + "\n"


@pytest.mark.parametrize("threads", ["1", "2"])
def test_run_sampled_on_the_fast_engine(model_path, capsys, threads):
    tok = load_tokenizer(sidecar_path(model_path))
    prompt = tok.encode("the model").ids
    want = generate(reference(model_path), prompt, 6, eos_id=0, temperature=0.7, seed=5)
    args = ["run", str(model_path), "--prompt", "the model", "--max-tokens", "6",
            "--temperature", "0.7", "--seed", "5", "--engine", "fast",
            "--threads", threads]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out == tok.decode(want) + "\n"
    assert captured.err == ""


def test_fast_trace_equals_the_reference_trace(model_path, tmp_path):
    ref_out, fast_out = tmp_path / "r.npz", tmp_path / "f.npz"
    ids = ["--token-ids", "5,17,3,9"]
    assert main(["trace", str(model_path), *ids, "--out", str(ref_out)]) == 0
    assert main(["trace", str(model_path), *ids, "--engine", "fast", "--out", str(fast_out)]) == 0
    with np.load(ref_out) as want, np.load(fast_out) as got:
        assert sorted(got.files) == sorted(want.files)
        for name in want.files:
            assert got[name].tobytes() == want[name].tobytes(), name


def test_run_chat_wraps_the_prompt(model_path, capsys):
    tok = load_tokenizer(sidecar_path(model_path))
    text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"  # ChatML by hand
    stops = {0, tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")}
    want = list(stream_tokens(reference(model_path), tok.encode(text).ids, 5, stops))
    assert main(["run", str(model_path), "--prompt", "hi", "--chat", "--max-tokens", "5"]) == 0
    assert capsys.readouterr().out == tok.decode(want) + "\n"


def test_without_a_tokenizer_ids_come_out(model_path, tmp_path, capsys):
    bare = tmp_path / "bare.vqf"
    bare.write_bytes(model_path.read_bytes())
    want = generate(reference(bare), [5, 6], 4, eos_id=0)
    assert main(["run", str(bare), "--token-ids", "5,6", "--max-tokens", "4"]) == 0
    assert capsys.readouterr().out.split() == [str(t) for t in want]
    assert main(["run", str(bare), "--prompt", "x"]) == 4  # no tokenizer file: cannot read
    assert "frontend.tokenizer.missing" in capsys.readouterr().err


def test_ids_outside_the_vocabulary_are_rule_errors(model_path, tmp_path, capsys):
    out = tmp_path / "bad.npz"
    assert main(["trace", str(model_path), "--token-ids", "99999", "--out", str(out)]) == 1
    assert "frontend.token_ids" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("ids", ["1,x", "", "-1", "1,,2", ",1", "1,"])
def test_malformed_token_ids_are_usage_errors(model_path, tmp_path, capsys, ids):
    out = tmp_path / "bad.npz"
    with pytest.raises(SystemExit) as usage:
        main(["trace", str(model_path), f"--token-ids={ids}", "--out", str(out)])
    assert usage.value.code == 2
    assert "--token-ids" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())


def test_fast_without_the_c_kernels_runs_the_reference_with_a_note(model_path, capsys, monkeypatch):
    """No compiler: docs/commands.md promises a note and the reference's tokens, no traceback."""
    import weightfile.frontend.session as session

    monkeypatch.setattr(session, "library", lambda: None)
    prompt = [3, 1, 4]
    want = generate(reference(model_path), prompt, 4, eos_id=0)
    args = ["run", str(model_path), "--token-ids", "3,1,4", "--max-tokens", "4", "--engine", "fast",
            "--tokenizer", str(sidecar_path(model_path))]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == session.NO_KERNELS_NOTE
    tok = load_tokenizer(sidecar_path(model_path))
    assert captured.out == tok.decode(want) + "\n"


# -- the default engine (issue 34 item 2) --------------------------------------------------------
@pytest.mark.parametrize("command", ["run", "trace"])
def test_the_fast_engine_is_the_default_and_ref_one_flag_away(command):
    from weightfile.cli import build_parser

    argv = [command, "m.vqf", "--token-ids", "1"] + ["--out", "t.npz"] * (command == "trace")
    assert build_parser().parse_args(argv).engine == "fast"
    assert build_parser().parse_args([*argv, "--engine", "ref"]).engine == "ref"


def test_the_reference_on_a_big_file_notes_its_time_per_token(model_path, capsys, monkeypatch):
    """The note comes with the reference (--engine ref, or no C kernels) on a file above the size
    threshold (lowered here: the tiny model stands for a real one), never with the fast engine."""
    import weightfile.commands._prompt as prompt
    import weightfile.fast._native as native

    monkeypatch.setattr(prompt, "REFERENCE_NOTE_BYTES", 0)
    args = ["run", str(model_path), "--token-ids", "3,1,4", "--max-tokens", "1"]
    assert main([*args, "--engine", "ref"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("note: the reference engine runs this") and len(err.splitlines()) == 1
    assert " s per token (estimated); --engine fast gives the same tokens" in err
    assert main(args) == 0
    assert capsys.readouterr().err == ""  # fast: nothing to note
    monkeypatch.setattr(prompt, "REFERENCE_NOTE_BYTES", model_path.stat().st_size)
    assert main([*args, "--engine", "ref"]) == 0
    assert capsys.readouterr().err == ""  # at the threshold: small enough
    monkeypatch.setattr(prompt, "REFERENCE_NOTE_BYTES", 0)
    monkeypatch.setattr(native, "library", lambda: None)  # no compiler: the reference runs
    note = prompt.reference_note(build_args(model_path))
    assert note is not None and "per token (estimated)" in note and "--engine fast" not in note


def build_args(model_path):
    from weightfile.cli import build_parser

    return build_parser().parse_args(["run", str(model_path), "--token-ids", "1"])


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.025, "0.025 s"), (42, "42 s"), (600, "10 min"), (7200, "2 h")]
)
def test_durations_read_in_a_person_s_unit(seconds, text):
    from weightfile.commands._prompt import duration

    assert duration(seconds) == text
