"""Issue 15: every command answers a user's mistake with ONE line on stderr and the documented
exit code (weightfile/commands/_common.py, README "Command line"), never a traceback."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.commands._common import EXIT_INTERRUPTED, EXIT_IO, EXIT_USAGE, EXIT_VIOLATIONS
from weightfile.examples import EXAMPLE_PATH

#: Commands that take one model or file first, with the arguments they need beside it.
FILE_COMMANDS = {
    "inspect": [],
    "verify": [],
    "dump": ["q4_q", "--out", "{tmp}/x.npy"],
    "run": ["--token-ids", "1"],
    "trace": ["--token-ids", "1", "--out", "{tmp}/t.npz"],
    "bench": ["--no-rss"],
}


def _argv(command: str, path: str, tmp_path) -> list[str]:
    return [command, path, *(a.format(tmp=tmp_path) for a in FILE_COMMANDS[command])]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_directory_is_one_line_naming_it_exit_4(command, tmp_path, capsys):
    assert main(_argv(command, str(tmp_path), tmp_path)) == EXIT_IO
    assert str(tmp_path) in _one_line(capsys)


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_missing_file_is_one_line_naming_it_exit_4(command, tmp_path, capsys):
    missing = str(tmp_path / "missing.vqf")
    assert main(_argv(command, missing, tmp_path)) == EXIT_IO
    assert missing in _one_line(capsys)


@pytest.mark.parametrize("command", ["inspect", "dump", "run", "trace", "bench"])
def test_an_empty_file_says_so(command, tmp_path, capsys):
    empty = tmp_path / "empty.vqf"
    empty.write_bytes(b"")
    assert main(_argv(command, str(empty), tmp_path)) == EXIT_VIOLATIONS
    line = _one_line(capsys)
    assert "empty" in line and "first bytes" not in line


def test_an_empty_file_of_no_known_extension_says_so(tmp_path, capsys):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert main(["inspect", str(empty)]) == EXIT_VIOLATIONS
    line = _one_line(capsys)
    assert "[format.magic]" in line and "empty" in line and "first bytes" not in line


def test_a_truncated_file_says_how_many_bytes_are_missing(tmp_path, capsys):
    data = EXAMPLE_PATH.read_bytes()
    cut = tmp_path / "cut.vqf"
    cut.write_bytes(data[:2000])
    assert main(["inspect", str(cut)]) == EXIT_VIOLATIONS
    line = _one_line(capsys)
    assert f"truncated, {len(data) - 2000} bytes missing" in line
    assert "[vqf.header.layout]" in line  # the rule id the corpus compares is unchanged
    assert len(line) < 200


def test_a_wrong_magic_is_in_our_words(tmp_path, capsys):
    bad = tmp_path / "bad.vqf"
    bad.write_bytes(b"XXXX" + EXAMPLE_PATH.read_bytes()[4:])
    assert main(["inspect", str(bad)]) == EXIT_VIOLATIONS
    line = _one_line(capsys)
    assert "[vqf.header.magic]" in line and "header.magic is 0x58585858" in line
    assert "Error in path" not in line and "parsing" not in line


BAD_OPTIONS = [
    ["--max-tokens", "0"],
    ["--max-tokens", "-1"],
    ["--temperature", "nan"],
    ["--temperature", "-1"],
    ["--threads", "0"],
    ["--seed", "-1"],
]


@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=" ".join)
def test_run_refuses_bad_numbers(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(EXAMPLE_PATH), "--token-ids", "1", *bad])
    assert exc.value.code == EXIT_USAGE
    line = _one_line(capsys)
    assert line.startswith("weightfile run: error: argument ") and bad[0] in line


@pytest.mark.parametrize("command", ["run", "trace"])
@pytest.mark.parametrize("ids", ["", ",", "1,x", "-1"])
def test_run_and_trace_refuse_bad_token_ids(command, ids, tmp_path, capsys):
    argv = [command, str(EXAMPLE_PATH), f"--token-ids={ids}"]
    if command == "trace":
        argv += ["--out", str(tmp_path / "t.npz")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == EXIT_USAGE
    assert "--token-ids" in _one_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", str(EXAMPLE_PATH), "--token-ids", "1", "--threads", "0", "--out", "t.npz"],
        ["demo", "--max-tokens", "0"],
        ["bench", str(EXAMPLE_PATH), "--threads", "0"],
        ["bench", str(EXAMPLE_PATH), "--tokens", "-1"],
        ["inspect", "--no-such-option"],
    ],
    ids=lambda a: " ".join(a[:1] + a[-2:]),
)
def test_other_bad_options_are_one_line_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == EXIT_USAGE
    _one_line(capsys)


@pytest.mark.parametrize("argv", [["inspect"], ["verify", "--example", str(EXAMPLE_PATH)]])
def test_file_or_example_is_a_usage_error(argv, capsys):
    assert main(argv) == EXIT_USAGE
    assert "exactly one of FILE or --example" in _one_line(capsys)


def test_ctrl_c_is_one_line_exit_130(tmp_path, monkeypatch, capsys):
    import weightfile.frontend.generate as generate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield  # pragma: no cover - makes this a generator, as stream_tokens is

    monkeypatch.setattr(generate, "stream_tokens", interrupted)
    model = shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf")
    assert main(["run", str(model), "--token-ids", "1"]) == EXIT_INTERRUPTED
    assert _one_line(capsys) == "weightfile run: interrupted"


def test_a_short_ninfer_entry_says_truncated_or_empty(tmp_path, capsys):
    """spec/ninfer3.md §header-checks: the rule ids stay; only the words are ours."""
    short = tmp_path / "short.ninfer"
    for data, words in ((b"", "file is empty"), (b"NINFER\0\3" + bytes(22), "truncated, 2 bytes")):
        short.write_bytes(data)
        assert main(["inspect", str(short)]) == EXIT_VIOLATIONS
        line = _one_line(capsys)
        assert "[ninfer3.header.truncated]" in line and words in line


@pytest.mark.parametrize(
    "argv",
    [
        ["encrypt", "{tmp}", "{tmp}/o.vqf", "--passphrase-file", "{pw}"],
        ["encrypt", "{tmp}/missing.vqf", "{tmp}/o.vqf", "--passphrase-file", "{pw}"],
        ["encrypt", str(EXAMPLE_PATH), "{tmp}/o.vqf", "--passphrase-file", "{tmp}/no-pw"],
        ["decrypt", "{tmp}/missing.vqf", "{tmp}/o.vqf", "--passphrase-file", "{pw}"],
        ["sign", str(EXAMPLE_PATH), "{tmp}/s.vqf", "--sign-key", "{tmp}/no-key"],
        ["verify", str(EXAMPLE_PATH), "--sign-pub", "@{tmp}/no-pub"],
        ["conformance", "run", "--impl", "{tmp}/no-such-program"],
    ],
    ids=lambda a: " ".join(a[:1] + a[-1:]),
)
def test_io_errors_of_the_other_commands_are_one_line_exit_4(argv, tmp_path, capsys):
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    argv = [a.format(tmp=tmp_path, pw=pw) for a in argv]
    assert main(argv) == EXIT_IO
    assert str(tmp_path) in _one_line(capsys)


# -- the done-when table: every command, each bad input of the Why list ------------------
#: (argv, exit code, words the one stderr line must hold). Placeholders: {tmp} a fresh folder,
#: {ex} the bundled example, {empty} an empty .vqf, {cut} the example cut at 2000 bytes,
#: {magic} the example with a wrong magic, {npz} an empty .npz, {pw} a passphrase file,
#: {exists} a file that exists. `test_every_command_is_in_the_table` keeps it complete.
BAD_INPUTS = [
    (["demo", "--max-tokens", "-1"], EXIT_USAGE, "--max-tokens"),
    (["demo", "--temperature", "nan"], EXIT_USAGE, "--temperature"),
    (["inspect", "{magic}"], EXIT_VIOLATIONS, "[vqf.header.magic]"),
    (["inspect", "{ex}", "--passphrase-file", "{tmp}/no-pw"], EXIT_IO, "no-pw"),
    (["verify", "{tmp}"], EXIT_IO, "a directory, not a regular file"),
    (["verify", "{empty}"], EXIT_VIOLATIONS, "1 violation(s)"),
    (["verify", "--checksum", "{cut}"], EXIT_VIOLATIONS, "1 violation(s)"),
    (["dump", "{cut}", "q4_q", "--out", "{tmp}/x.npy"], EXIT_VIOLATIONS, "truncated, 87096 bytes"),
    (["dump", "{ex}", "no_such", "--out", "{tmp}/x.npy"], EXIT_USAGE, "no_such"),
    (["dump", "{ex}", "q4_q", "--out", "{tmp}/no-dir/x.npy"], EXIT_IO, "no-dir"),
    (
        ["dump", "{ex}", "--all", "--out", "{tmp}"],
        EXIT_IO,
        "[format.file.destination] the destination is a directory",
    ),
    (
        ["dump", "{ex}", "--all", "--out", "{tmp}/no-dir/x.safetensors"],
        EXIT_IO,
        "folder: no such file ({tmp}/no-dir)",
    ),
    (["run", "{magic}", "--token-ids", "1"], EXIT_VIOLATIONS, "[vqf.header.magic]"),
    (["run", "{ex}", "--token-ids", "1", "--max-tokens", "0"], EXIT_USAGE, "--max-tokens"),
    (["trace", "{empty}", "--token-ids", "1", "--out", "{tmp}/t.npz"], EXIT_VIOLATIONS, "empty"),
    (["trace", "{ex}", "--token-ids", "", "--out", "{tmp}/t.npz"], EXIT_USAGE, "--token-ids"),
    (
        ["trace", "{ex}", "--token-ids", "1", "--out", "{tmp}"],
        EXIT_IO,
        "[format.file.destination] the destination is a directory",
    ),
    (["import", "{tmp}/missing", "{tmp}/o.vqf"], EXIT_IO, "config.json"),
    (["import", "{tmp}", "{tmp}/o.vqf", "--qtype", "q3"], EXIT_USAGE, "--qtype"),
    (["convert", "{tmp}", "{tmp}/o.vqf"], EXIT_IO, "config.json"),
    (["convert", "{empty}", "{tmp}/o.gguf"], EXIT_VIOLATIONS, "file is empty"),
    (["convert", "{cut}", "{tmp}/o.gguf"], EXIT_VIOLATIONS, "truncated, 87096 bytes"),
    (["convert", "{ex}", "{tmp}/o.txt"], 3, "extensions .gguf, .ninfer, .vqf"),
    (["convert", "{ex}", "{tmp}/exists.gguf"], EXIT_USAGE, "--force"),
    (["encrypt", "{empty}", "{tmp}/o.vqf", "--passphrase-file", "{pw}"], EXIT_VIOLATIONS, "empty"),
    (
        ["decrypt", "{ex}", "{tmp}/o.vqf", "--passphrase-file", "{pw}"],
        EXIT_VIOLATIONS,
        "not encrypted",
    ),
    (["sign", "{cut}", "{tmp}/s.vqf", "--sign-key", "{tmp}/no-key"], EXIT_IO, "no-key"),
    (["keygen", "--out", "{tmp}/no-dir/k.key"], EXIT_IO, "no-dir"),
    (["keygen", "--out", "{exists}"], EXIT_USAGE, "--force"),
    (["conformance", "run", "--run", "no/such/*"], EXIT_USAGE, "no case id matches"),
    (["conformance", "run", "--impl", "{tmp}/no-such-program"], EXIT_IO, "no-such-program"),
    (["conformance", "generate", "--no-such-option"], EXIT_USAGE, "--no-such-option"),
    (["conformance", "export", "{tmp}"], EXIT_USAGE, "exists"),
    (["bench", "{cut}", "--no-rss"], EXIT_VIOLATIONS, "truncated, 87096 bytes"),
    (["bench", "--synthetic", "no-such-model"], EXIT_USAGE, "no-such-model"),
    (["bench", "{ex}", "-r", "0"], EXIT_USAGE, "-r/--repetitions"),
    (["diff", "{tmp}", "{npz}"], EXIT_IO, "a directory, not a regular file"),
    (["diff", "{npz}", "{npz}"], EXIT_IO, "not an .npy, .npz or safetensors dump (the file is"),
    (["diff", "{ex}", "{npz}"], EXIT_IO, "no .npy magic, zip archive or safetensors header"),
    (["diff", "{npy}", "{ex}"], EXIT_IO, "[frontend.dump.format]"),
    (["diff", "{npy}", "{npy}", "--atol", "x"], EXIT_USAGE, "--atol"),
    (["diff", "{tmp}/missing.npz", "{npz}"], EXIT_IO, "missing.npz"),
    (["replay", "{ex}", "{tmp}/missing.npz"], EXIT_IO, "missing.npz"),
]


@pytest.fixture
def bad_files(tmp_path):
    data = EXAMPLE_PATH.read_bytes()
    files = {"tmp": tmp_path, "ex": EXAMPLE_PATH}
    for name, content in (("empty.vqf", b""), ("cut.vqf", data[:2000]), ("empty.npz", b""),
                          ("magic.vqf", b"XXXX" + data[4:]), ("pw", b"secret\n"),
                          ("exists", b"x"), ("exists.gguf", b"x")):  # fmt: skip
        (tmp_path / name).write_bytes(content)
        files[name.split(".")[0] if name != "empty.npz" else "npz"] = tmp_path / name
    np.save(tmp_path / "a.npy", np.zeros(3, np.float32))  # diff once tracebacked on an .npy
    files["npy"] = tmp_path / "a.npy"
    files["magic"] = tmp_path / "magic.vqf"
    return files


def _run_main(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors leave through SystemExit(2)
        return exc.code


@pytest.mark.parametrize(("argv", "code", "says"), BAD_INPUTS, ids=lambda x: " ".join(x)
                         if isinstance(x, list) else "")  # fmt: skip
def test_every_command_answers_bad_input_in_one_line(argv, code, says, bad_files, capsys):
    args = [a.format(**bad_files) for a in argv]
    assert _run_main(args) == code
    line = _one_line(capsys)
    assert says.format(**bad_files) in line, line


def _commands() -> list[str]:
    import argparse

    from weightfile.cli import build_parser

    def subs(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        return found[0].choices if found else {}

    out = []
    for name, p in subs(build_parser()).items():
        out += [f"{name} {n}" for n in subs(p)] or [name]
    return out


def test_every_command_is_in_the_table():
    covered = {
        " ".join(argv[:2]) if argv[0] == "conformance" else argv[0] for argv, *_ in BAD_INPUTS
    }
    assert set(_commands()) <= covered, set(_commands()) - covered


#: Arguments that parse, per command, so that the interrupt is what ends it.
PARSING = {
    "demo": ["demo"],
    "inspect": ["inspect", "{ex}"],
    "verify": ["verify", "{ex}"],
    "dump": ["dump", "{ex}", "q4_q", "--out", "{tmp}/x.npy"],
    "run": ["run", "{ex}", "--token-ids", "1"],
    "trace": ["trace", "{ex}", "--token-ids", "1", "--out", "{tmp}/t.npz"],
    "import": ["import", "{tmp}", "{tmp}/o.vqf"],
    "convert": ["convert", "{tmp}", "{tmp}/o.vqf"],
    "encrypt": ["encrypt", "{ex}", "{tmp}/o.vqf"],
    "decrypt": ["decrypt", "{ex}", "{tmp}/o.vqf"],
    "sign": ["sign", "{ex}", "{tmp}/o.vqf", "--sign-key", "{tmp}/k"],
    "keygen": ["keygen", "--out", "{tmp}/k"],
    "conformance run": ["conformance", "run"],
    "conformance generate": ["conformance", "generate", "--check"],
    "conformance export": ["conformance", "export", "{tmp}/corpus"],
    "bench": ["bench", "{ex}"],
    "diff": ["diff", "{npz}", "{npz}"],
    "replay": ["replay", "{ex}", "{npz}"],
}


@pytest.mark.parametrize("command", _commands())
def test_ctrl_c_in_any_command_is_one_line_exit_130(command, bad_files, monkeypatch, capsys):
    """Wherever the interrupt lands inside a command, the CLI ends it in one line, exit 130.
    The command's own `run` raises it here; two real places are the test below, run's
    generation loop `test_ctrl_c_is_one_line_exit_130`."""
    from weightfile import cli

    parser = cli.build_parser()
    real_parse = parser.parse_args

    def interrupted(args):
        raise KeyboardInterrupt

    def parse(argv=None):
        args = real_parse(argv)
        args.run = interrupted
        return args

    monkeypatch.setattr(parser, "parse_args", parse)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert main([a.format(**bad_files) for a in PARSING[command]]) == EXIT_INTERRUPTED
    assert _one_line(capsys) == f"weightfile {command.split()[0]}: interrupted"


def test_every_command_has_parsing_arguments():
    assert set(PARSING) == set(_commands())


def test_ctrl_c_during_a_checksum_and_a_corpus_run(monkeypatch, capsys):
    """Two real places: the FNV pass of verify --checksum and a conformance case."""
    from dataclasses import replace

    from weightfile import backends
    from weightfile.conformance import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # verify --engine fast (the default) hashes with the checksum of the backend it names
    interrupting = replace(backends.backend_named("fast"), checksum=interrupted)
    monkeypatch.setitem(backends.BACKENDS, "fast", interrupting)
    monkeypatch.setattr(runner, "run_case", interrupted)
    assert main(["verify", "--checksum", str(EXAMPLE_PATH)]) == EXIT_INTERRUPTED
    assert _one_line(capsys) == "weightfile verify: interrupted"
    assert main(["conformance", "run", "--run", "vqf/*"]) == EXIT_INTERRUPTED
    assert _one_line(capsys) == "weightfile conformance: interrupted"


def test_generation_stops_at_the_context_with_a_note(capsys):
    """The example's max_seq_len is 256 (its arch): 250 prompt tokens leave 6 new ones."""
    ids = ",".join(["1"] * 250)
    argv = ["run", str(EXAMPLE_PATH), "--token-ids", ids, "--max-tokens", "10", "--engine", "fast"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) <= 6  # a stop id may end it sooner
    assert _one_line_of(captured.err) == (
        "note: the model's context is 256 tokens: generating 6, not 10 (--max-tokens)"
    )
    assert main(["run", str(EXAMPLE_PATH), "--token-ids", ",".join(["1"] * 256)]) == EXIT_USAGE
    assert "fill the model's context of 256" in _one_line(capsys)


def _one_line_of(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
