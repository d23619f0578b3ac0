"""Issue 34 item 10: destinations and memory.

* `run --save-logits` and `bench --plot` into a missing folder are refused before the work (exit
  4, nothing generated or measured), and `bench --plot` follows the one output policy (an
  existing file only with --force, never through a symlink).
* Output modes, by the decision of docs/design.md "Reliability": every public output is created
  0644 (less only where the umask says so), a private key 0600 whatever the umask.
* `dump --all` is streamed: its peak traced allocation is about one tensor's decode plus a
  constant, measured with tracemalloc on a file whose tensors together are many times that.
(`.ninfer` --force: tests/convert/test_qwen35_ninfer.py.)
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.commands._common import EXIT_IO, EXIT_USAGE
from weightfile.examples import EXAMPLE_PATH


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- a missing folder, before the work -------------------------------------------------------------
def test_bench_plot_into_a_missing_folder_fails_before_generating(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    cache = tmp_path / "cache"
    cache.mkdir()
    argv = ["bench", "--synthetic", "tiny-q4_0", "--cache-dir", str(cache), "--no-rss",
            "--no-ref", "-p", "4", "-n", "2", "-r", "1", "-t", "1",
            "--plot", str(tmp_path / "missing" / "b.png")]  # fmt: skip
    assert main(argv) == EXIT_IO
    assert str(tmp_path / "missing") in capsys.readouterr().err
    assert not list(cache.iterdir())  # nothing generated, nothing measured


def test_bench_plot_follows_the_output_policy(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "b.png"
    png.write_bytes(b"old")
    argv = ["bench", str(EXAMPLE_PATH), "--no-rss", "--no-ref", "-p", "4", "-n", "2", "-r", "1",
            "-t", "1", "--plot", str(png)]  # fmt: skip
    assert main(argv) == EXIT_USAGE and png.read_bytes() == b"old"
    link = tmp_path / "l.png"
    link.symlink_to(tmp_path / "target.png")
    assert main([*argv[:-1], str(link), "--force"]) == EXIT_IO
    assert not (tmp_path / "target.png").exists()
    assert main([*argv, "--force"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and mode(png) == 0o644
    capsys.readouterr()


def test_run_save_logits_into_a_missing_folder_fails_before_decoding(tmp_path, capsys) -> None:
    argv = ["run", str(EXAMPLE_PATH), "--token-ids", "1,2", "--max-tokens", "2",
            "--save-logits", str(tmp_path / "missing" / "l.npz")]  # fmt: skip
    assert main(argv) == EXIT_IO
    out, err = capsys.readouterr()
    assert out == "" and str(tmp_path / "missing") in err  # no token printed: refused first


# -- modes -----------------------------------------------------------------------------------------
@pytest.fixture
def umask_zero():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_public_outputs_are_0644_and_keys_0600(tmp_path, umask_zero, capsys) -> None:
    pytest.importorskip("gguf")
    key_txt = tmp_path / "key.txt"
    key_txt.write_text("pass\n")
    runs = {
        "dump.npy": ["dump", str(EXAMPLE_PATH), "q4_q", "--out", "{}"],
        "dump.npz": ["dump", str(EXAMPLE_PATH), "q4_q", "--words", "--out", "{}"],
        "dump.st": ["dump", str(EXAMPLE_PATH), "--all", "--out", "{}"],
        "trace.npz": ["trace", str(EXAMPLE_PATH), "--token-ids", "1,2", "--out", "{}"],
        "logits.npz": ["run", str(EXAMPLE_PATH), "--token-ids", "1,2", "--max-tokens", "1",
                       "--save-logits", "{}"],
        "model.gguf": ["convert", str(EXAMPLE_PATH), "{}"],
        "enc.vqf": ["encrypt", str(EXAMPLE_PATH), "{}", "--passphrase-file", str(key_txt)],
        "signer.key": ["keygen", "--out", "{}"],
    }  # fmt: skip
    for name, argv in runs.items():
        out = tmp_path / name
        assert main([a.replace("{}", str(out)) for a in argv]) == 0, name
    got = {name: mode(tmp_path / name) for name in runs}
    want = {name: 0o644 for name in runs} | {"signer.key": 0o600}
    assert got == want
    os.umask(0o077)  # a stricter umask is honoured for public outputs
    assert main(["dump", str(EXAMPLE_PATH), "q4_q", "--out", str(tmp_path / "p.npy")]) == 0
    assert mode(tmp_path / "p.npy") == 0o600
    capsys.readouterr()


# -- dump --all, streamed --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wide_file(tmp_path_factory) -> Path:
    """A tiny-geometry Q8_0 Qwen3 with 16 layers: 31 tensors, ~4.7 MB as float32, the largest
    ~1 MB (the stacked [16, ff, d] matrices)."""
    from weightfile.bench.synthetic import arch_of, spec_named, tensor_sources
    from weightfile.fast.vqf.write import write_vqf

    spec = dataclasses.replace(spec_named("tiny-q8_0"), name="tiny-wide", layers=16)
    path = tmp_path_factory.mktemp("wide") / "wide.vqf"
    write_vqf(path, arch=arch_of(spec), tensors=tensor_sources(spec), flags=spec.flags)
    return path


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dump_all_holds_about_one_tensor(wide_file, tmp_path) -> None:
    from safetensors.numpy import load_file

    from weightfile.commands.dump import dump_all
    from weightfile.fast.backend import FAST
    from weightfile.model_file import open_model_file

    out = tmp_path / "all.st"
    with open_model_file(wide_file) as f:
        names = f.names()
        dump_all(f, out, FAST, False)  # first use: codecs imported, kernels loaded
        one = max(_peak(lambda n=n: f.decode(n, engine=FAST)) for n in names)
        total = sum(4 * int(np.prod(f.shape(n))) for n in names)
        peak = _peak(lambda: dump_all(f, out, FAST, True))
        assert total > 2 * one  # the file discriminates: holding every tensor cannot pass
        assert peak <= one + (64 << 10), (peak, one, total)
        loaded = load_file(str(out))  # the safetensors library reads it back, value for value
        assert list(loaded) == sorted(names) or set(loaded) == set(names)
        for n in names:
            assert np.array_equal(loaded[n].view(np.uint32), f.decode(n).view(np.uint32)), n
