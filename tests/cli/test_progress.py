"""Progress on stderr (tqdm): drawn on a terminal unless --quiet, silent otherwise; the compile
note and the once-per-cache no-compiler warning."""

import argparse
import sys

import pytest

from weightfile.cli import build_parser, main
from weightfile.progress import ProgressBar, each


def test_progress_bar_draws_on_stderr_and_clears_itself(capsys):
    bar = ProgressBar(1000, "fnv1a64", enabled=True, delay=0)
    for _ in range(10):
        bar(100)
    bar.close()
    err = capsys.readouterr().err
    assert err.startswith("\rfnv1a64:") and "B/s" in err  # tqdm's bar, in bytes
    assert err.endswith("\r") and "\n" not in err  # removed: the command's last line stays


def test_progress_bar_is_silent_when_disabled(capsys):
    bar = ProgressBar(10, "x", enabled=False)
    bar(10)
    bar.close()
    assert list(each(range(3), "y", enabled=False)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


@pytest.fixture
def terminal(monkeypatch):
    """stderr claims to be a terminal; bars draw at once; the CLI's settings are put back."""
    from weightfile import progress
    from weightfile.fast import notify

    monkeypatch.setattr(progress, "terminal", lambda: True)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "_quiet", False)
    monkeypatch.setattr(notify, "on_compile", notify.on_compile)


def test_only_a_terminal_without_quiet_wants_progress(terminal, monkeypatch):
    from weightfile import progress

    assert progress.wanted()
    progress.configure(quiet=True)
    assert not progress.wanted()
    progress.configure(quiet=False)
    monkeypatch.setattr(progress, "terminal", lambda: False)
    assert not progress.wanted()


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["verify", "--checksum", "--example"], "fnv1a64:"),
        (["conformance", "run", "--builtin", "ref", "--run", "ninfer3/v1/valid/single/tiny"],
         "conformance:"),
    ],
)  # fmt: skip
def test_long_commands_draw_a_bar_on_a_terminal_unless_quiet(terminal, capsys, argv, label):
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert label in captured.err and label not in captured.out  # stdout stays parseable
    assert main([*argv, "--quiet"]) == 0
    assert label not in capsys.readouterr().err


def test_every_long_command_takes_quiet():
    from weightfile.cli import LONG_COMMANDS

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for key in LONG_COMMANDS:
        p = sub.choices[key.split()[0]]
        for word in key.split()[1:]:
            p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[
                word
            ]
        assert {"-q", "--quiet"} <= set(p._option_string_actions), key
    assert set(LONG_COMMANDS) >= {"verify", "import", "convert", "conformance run", "bench"}


def test_the_no_compiler_warning_is_one_line_once_per_cache(tmp_path):
    import subprocess

    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "from weightfile.fast.vqf.fnv1a64 import fnv1a64\n"
        "print(hex(fnv1a64(b'a')))\n"
    )
    env = {"CC": str(tmp_path / "no-such-cc"), "WEIGHTFILE_CACHE": str(tmp_path), "PATH": ""}
    runs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    first = [ln for ln in runs[0].stderr.splitlines() if "RuntimeWarning" in ln]
    assert len(first) == 1 and "C kernels unavailable" in first[0] and len(first[0]) < 400
    assert "C kernels unavailable" not in runs[1].stderr  # the cache was told once
    assert all(r.stdout.strip() == "0xaf63dc4c8601ec8c" for r in runs)  # FNV-1a-64 of b"a"


def test_the_compile_note_is_one_line(tmp_path, monkeypatch, capsys):
    from weightfile.fast import _native, notify

    cc = _native.compiler()
    assert cc is not None, "CI machines have a C compiler"
    notes: list[str] = []
    monkeypatch.setattr(notify, "on_compile", notes.append)
    src = tmp_path / "k.c"
    src.write_text("int wf_one(void) { return 1; }\n")
    _native.build(cc, [src], tmp_path / "out")
    _native.build(cc, [src], tmp_path / "out")  # cached: no second compile, no second note
    assert notes == ["weightfile: compiling the C kernels (1 file(s), once)"]
