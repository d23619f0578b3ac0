"""Issue 15: every command answers a user's mistake with ONE line on stderr and the documented
exit code (weightfile/commands/_common.py, README "Command line"), never a traceback."""

from __future__ import annotations

import shutil

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
    """spec/ninfer3.md §1.3: the rule ids stay; only the words are ours."""
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
