"""Tracebacks and an unkillable command (issue 34 item 3): a prompt that is not UTF-8, a bandwidth
buffer larger than the machine, bench tests longer than the model's context, and Ctrl-C during a
long prefill, which the fast engine runs in short C calls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from strategies.tiny_vqf import write_tiny_model

from weightfile.cli import main
from weightfile.commands._common import EXIT_INTERRUPTED, EXIT_USAGE
from weightfile.spec.errors import InvalidError

CAFE = "caf\udce9"  # b"caf\xe9" (Latin-1) as Python decodes a UTF-8 command line: surrogateescape
CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "corpus"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("tiny"))


def usage_line(capsys, excinfo) -> str:
    assert excinfo.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{model}", "--prompt", CAFE],
        ["run", "{model}", "--prompt", CAFE, "--chat"],
        ["trace", "{model}", "--prompt", CAFE, "--out", "{tmp}/t.npz"],
        ["run", "{ninfer}", "--prompt", CAFE],
        ["demo", "--prompt", CAFE],
    ],
    ids=["run", "chat", "trace", "ninfer", "demo"],
)
def test_a_prompt_that_is_not_utf8_is_a_usage_error_naming_the_option(
    model_path, tmp_path, capsys, argv
):
    ninfer = next(CORPUS.glob("**/*.ninfer"))
    filled = [a.format(model=model_path, tmp=tmp_path, ninfer=ninfer) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(filled)
    err = usage_line(capsys, exc)
    assert "--prompt" in err and "not UTF-8" in err and "0xe9" in err
    assert not (tmp_path / "t.npz").exists()


def test_the_console_passes_non_utf8_bytes_to_the_same_error(tmp_path):
    """The real thing: the byte 0xE9 on a UTF-8 command line, through the console script."""
    env = {**os.environ, "WEIGHTFILE_CACHE": str(tmp_path), "LC_ALL": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-m", "weightfile", "demo", "--prompt", b"caf\xe9"],
        capture_output=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == EXIT_USAGE and b"Traceback" not in done.stderr
    assert b"--prompt" in done.stderr and b"not UTF-8" in done.stderr


def test_the_api_refuses_a_non_utf8_prompt_by_rule(model_path):
    from weightfile.frontend.dispatch import load_session
    from weightfile.frontend.session import prompt_ids

    s = load_session(model_path, None, need_tokenizer=True)
    with pytest.raises(InvalidError) as exc:
        prompt_ids(s, CAFE, None)
    assert exc.value.rule == "frontend.prompt"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--bandwidth-mib", "99999999"], "--bandwidth-mib 99999999: the probe's buffer"),
        (["-p", "100000"], "-p/--n-prompt 100000: the model's context is 512 tokens"),
        (["-p", "8", "-n", "513"], "-n/--n-gen 513: the model's context is 512 tokens"),
        (["--tokens", "513"], "-p/--n-prompt 513"),
        (
            ["-p", "8", "-n", "4", "-d", "0,505"],
            "-d/--n-depth 505: with the 8-token test it "
            "needs 513 positions, but the model's context is 512 tokens (max_seq_len)",
        ),
    ],
)
def test_bench_bounds_are_usage_errors_before_the_work(tmp_path, capsys, flags, says):
    """tiny-q4_0's max_seq_len is 512 (weightfile/families/qwen3/presets.py); no buffer is
    allocated and no test runs (nothing on stdout)."""
    argv = ["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(tmp_path), "-q", *flags]
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert says in captured.err and captured.out == "" and "Traceback" not in captured.err


def test_bench_at_the_context_is_accepted(tmp_path, capsys):
    from weightfile.commands._common import UsageError
    from weightfile.commands.bench import check_lengths

    path = write_tiny_model(tmp_path)  # max_seq_len of strategies.tiny_vqf's file
    from weightfile.ref.vqf.read import open_vqf

    with open_vqf(path) as vqf:
        limit = int(vqf.header.arch["max_seq_len"])
    check_lengths(path, [limit], [limit])  # no error: N positions for N tokens
    check_lengths(path, [3], [limit - 8], [0, 8])  # nor D + N positions for N tokens at depth D
    with pytest.raises(UsageError, match=f"-d/--n-depth 9: .* needs {limit + 1} positions"):
        check_lengths(path, [3], [limit - 8], [9, 0])


CHILD = textwrap.dedent(
    """
    import signal, sys
    from weightfile.fast.qwen3 import decoder
    from weightfile.cli import main

    decoder.CALL_BUDGET_MACS = 1  # one token per C call: the prompt is {n} calls
    inner = decoder.FastQwen3Model._forward_chunk
    calls = []

    def chunk(self, x, *rest):
        out = inner(self, x, *rest)
        calls.append(len(x))
        print(f"chunk {{len(x)}}", flush=True)
        if len(calls) == 1:
            # Ctrl-C arrives while a C call runs: held (as a long call holds it) until the parent
            # has sent it, then released, so it lands after the call, where Python handles it
            signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGINT}})
            print("ready", flush=True)
            sys.stdin.readline()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})
        return out

    decoder.FastQwen3Model._forward_chunk = chunk
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_long_prefill_stops_after_the_current_call(model_path):
    """Bounded by work, not time: the prompt is N calls; Ctrl-C sent during the first one ends
    the command with 130 before the second finishes its next call, not after all N."""
    from weightfile.fast._native import library

    if library() is None:
        pytest.skip("the fast engine needs the C kernels")
    n = 48
    ids = ",".join(str(i % 50 + 1) for i in range(n))
    argv = ["run", str(model_path), "--token-ids", ids, "--max-tokens", "1", "--engine", "fast"]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(n=n), *argv],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = child.stdout.readline()
    assert first.startswith("chunk ") and child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate("go\n")
    assert child.returncode == EXIT_INTERRUPTED, err
    assert "interrupted" in err and "Traceback" not in err
    done = [int(line.split()[1]) for line in [first, *out.splitlines()] if line.startswith("chunk")]
    assert done[0] == 1 and sum(done) <= 2 < n  # at most one more call ran, of the n
