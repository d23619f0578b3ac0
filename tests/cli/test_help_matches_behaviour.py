"""Issue 34 item 9: help and docs that say what the commands do.

The cache folder is decided in one place and stated in one wording; `convert --help` names GGUF;
`dump --all` writes exactly OUT; `run --help` states what the board profile needs (its head_dim
limits are the board model's own constants); `import` and `convert` take the same option
spellings, and an unknown option points at the command's own --help; the weight modes are
explained in bits per weight, derived here from the spec's block records (Q8_0 = 8.5 bpw, as
llama-quantize counts), in --help and in docs/commands.md's table alike.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from weightfile.cli import build_parser, main
from weightfile.commands._common import EXIT_USAGE

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"


def help_text(*command: str) -> str:
    parser = build_parser()
    for word in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return " ".join(parser.format_help().split())  # wrapping undone


def one_line(text: str) -> str:
    return " ".join(text.split())


# -- the cache folder ------------------------------------------------------------------------------
def test_every_cache_user_honours_xdg_cache_home_through_one_helper(monkeypatch, tmp_path):
    from weightfile.bench.synthetic import default_cache_dir
    from weightfile.demo import cache_root as demo_root
    from weightfile.fast._native import cache_dir as native_dir
    from weightfile.ref.user_cache import CACHE_WORDING

    monkeypatch.delenv("WEIGHTFILE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "xdg" / "weightfile"
    assert (native_dir(), default_cache_dir(), demo_root()) == (
        root / "native",
        root / "synthetic",
        root,
    )
    monkeypatch.setenv("WEIGHTFILE_CACHE", str(tmp_path / "own"))
    assert native_dir() == tmp_path / "own" / "native"
    assert default_cache_dir() == tmp_path / "own" / "synthetic"
    monkeypatch.delenv("WEIGHTFILE_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert native_dir() == tmp_path / "home" / ".cache" / "weightfile" / "native"
    # one wording, wherever the cache is stated
    for text in (help_text("demo"), help_text("bench"), one_line(DOCS.read_text("utf-8"))):
        assert CACHE_WORDING in text
        assert "~/.cache/weightfile/" not in text.replace(CACHE_WORDING, "")


# -- what each help says ---------------------------------------------------------------------------
def test_convert_help_names_every_source_and_target() -> None:
    text = help_text("convert")
    for word in ("GGUF", ".gguf", ".vqf", ".ninfer", "Hugging Face"):
        assert word in text, word


def test_dump_help_says_all_writes_exactly_out() -> None:
    text = help_text("dump")
    assert "OUT.safetensors" not in text
    assert "exactly OUT" in text


def test_run_help_states_the_board_profiles_engines_and_limits() -> None:
    from weightfile.ref.qwen3.board.model import FFN_MULTIPLE, HEAD_DIM_MAX, HEAD_DIM_MULTIPLE

    text = help_text("run")
    board = text[text.index("kestrel-board: ") :]
    assert "reference engine" not in board and "either --engine" in board
    assert f"head_dim a multiple of {HEAD_DIM_MULTIPLE} and at most {HEAD_DIM_MAX}" in board
    assert f"FFN width a multiple of {FFN_MULTIPLE}" in board
    docs = one_line(DOCS.read_text("utf-8"))
    assert f"head_dim is a multiple of {HEAD_DIM_MULTIPLE} and at most {HEAD_DIM_MAX}" in docs


# -- import and convert: one set of spellings ------------------------------------------------------
def _options(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices[command]._actions for o in a.option_strings}


def test_import_and_convert_accept_the_same_spellings(capsys) -> None:
    assert _options("import") == _options("convert")
    parser = build_parser()
    a = parser.parse_args(["import", "hf", "o.vqf", "--wmode", "q4"])
    b = parser.parse_args(["convert", "hf", "o.vqf", "--qtype", "q4_0"])
    from weightfile.commands.convert import resolve_wmode

    assert resolve_wmode(a) == resolve_wmode(b) == "q4"
    assert main(["convert", "hf", "o.vqf", "--qtype", "q4_0", "--wmode", "q8"]) == EXIT_USAGE
    assert "name different modes" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["import", "a", "b", "--bogus"], ["conformance", "run", "--bogus"]]
)
def test_an_unknown_option_points_at_the_commands_own_help(argv, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == EXIT_USAGE
    command = " ".join(w for w in argv if w in ("import", "conformance", "run"))
    assert f"(see 'weightfile {command} --help')" in capsys.readouterr().err


# -- bits per weight -------------------------------------------------------------------------------
def _bpw_from_blocks() -> dict[str, float]:
    """Stored bits per projection weight, from the spec's block records alone: 8 · sizeof / 32
    (spec/vqf.md §q8-0: a 2-byte f16 scale + 32 int8 codes; spec/vqf.md §q4-0: 2 + 16 bytes)."""
    from weightfile.spec.codecs.vqf.blocks import block_q4_0, block_q8_0

    q8, q4 = 8 * block_q8_0.sizeof() / 32, 8 * block_q4_0.sizeof() / 32
    assert (q8, q4) == (8.5, 4.5)  # llama-quantize's figures for Q8_0 and Q4_0
    # q4i and g256 are Q8_0 blocks (spec/vqf.md §q4i8, §g256); dual stores both sets
    return {"q8": q8, "q4": q4, "dual": q8 + q4, "q4i": q8, "g256": q8, "f16": 16.0, "f32": 32.0}


def test_weight_modes_are_explained_in_bits_per_weight() -> None:
    from weightfile.convert.vqf_plan import WMODES, bits_per_weight

    want = _bpw_from_blocks()
    assert set(WMODES) == set(want)
    assert {m: bits_per_weight(m) for m in WMODES} == want
    assert bits_per_weight("q4", x8=True) == 2 * want["q4"]
    text = help_text("convert")
    for mode, bpw in want.items():
        assert f"{mode} {bpw:.1f} bpw" in text, mode
    # the table of docs/commands.md: one row per mode, its bpw column
    rows = dict(re.findall(r"^\| `(\w+)`[^|]*\| [^|]+ \| ([\d.]+) \|", DOCS.read_text(), re.M))
    assert {m: float(rows[m]) for m in want} == want
    assert "quantizer generations" in one_line(DOCS.read_text()).lower()


def test_bench_help_and_docs_name_a_depth_as_the_rows_do() -> None:
    """-d (issue 33 item 5): --help and docs/commands.md give the row name measure.label_of
    prints at a depth, and say the reference's row stays at depth 0 (report.REF_DEPTH)."""
    from weightfile.bench.measure import label_of
    from weightfile.bench.report import REF_DEPTH

    assert REF_DEPTH.startswith("ref: depth 0 only")
    name = label_of(0, 128, 1024)
    for text in (help_text("bench"), one_line(DOCS.read_text("utf-8"))):
        assert "-d" in text and "--n-depth" in text and f"`{name}`" in text
        assert "untimed prefill" in text and "depth 0" in text
