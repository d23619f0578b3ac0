"""The `weightfile` command line: inspect and verify, their exit codes and outputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from strategies.vqf import patch_bytes, patch_header

import weightfile
from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH
from weightfile.spec.vqf.flags import VQFFlag


@pytest.fixture
def example(tmp_path):
    return shutil.copy(EXAMPLE_PATH, tmp_path / "m.vqf")


def test_inspect_prints_flags_by_name_and_the_directory(capsys):
    assert main(["inspect", "--example"]) == 0
    out = capsys.readouterr().out
    assert "Q8_8X8 | Q4_4X4 | EMB_F16" in out
    assert "q4_lm" in out and "Q4_0" in out and "256 × 64" in out


def test_inspect_json_is_machine_readable(capsys):
    assert main(["inspect", "--json", str(EXAMPLE_PATH)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["header"]["flag_names"] == ["Q8_8X8", "Q4_4X4", "EMB_F16"]
    assert [t["name"] for t in d["tensors"]][:2] == ["token_embed", "final_norm"]
    assert d["arch"]["dim"] == 64


def test_verify_valid_file_exits_zero(capsys):
    assert main(["verify", "--checksum", "--example"]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_verify_reports_every_violation_and_exits_one(example, capsys, engine):
    patch_bytes(example, 4000, b"\x07")  # the zero gap
    patch_header(example, lambda h: h["arch"].update({"kv_lora_rank": 5}))
    patch_bytes(example, 5000, b"\x99")  # inside token_embed: FNV mismatch
    assert main(["verify", "--checksum", "--engine", engine, str(example)]) == 1
    out = capsys.readouterr().out
    for rule in ("vqf.file.gap", "vqf.arch.reserved", "vqf.trailer.fnv"):
        assert f"[{rule}]" in out
    assert "byte 4000" in out


def test_verify_of_a_signed_file_without_a_trusted_key_is_unverifiable(example, capsys):
    sig = {"pub": b"\x11" * 64, "r": b"\x22" * 32, "s": b"\x33" * 32, "digest": b"\x44" * 32,
           "id": b"vllm-shs-vqf".ljust(32, b"\0"), "id_len": 12, "rsvd": 0}  # fmt: skip
    patch_header(example, lambda h: h.update({"flags": h["flags"] | VQFFlag.SIGNED, "sig": sig}))
    assert main(["verify", str(example)]) == 3  # never "valid"
    assert "[vqf.sig.no_key]" in capsys.readouterr().out


def test_unreadable_input_is_one_line_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"ABCD" + bytes(600))
    assert main(["inspect", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "MalformedError" in err and "unknown file format" in err and "Traceback" not in err
    assert "[format.magic]" in err
    named = tmp_path / "x.vqf"
    named.write_bytes(b"ABCD" + bytes(600))
    assert main(["inspect", str(named)]) == 1
    err = capsys.readouterr().err
    assert "MalformedError" in err and "[vqf.header.magic]" in err and "Traceback" not in err
    assert main(["verify", str(tmp_path / "missing.vqf")]) == 4  # cannot read


# An unknown magic: the extension decides whose magic rule it is; no known extension is
# format.magic. CLI verify, weightfile.validate and weightfile.open all say the same rule.
BAD_MAGIC = [
    ("x.vqf", "vqf.header.magic"),
    ("x.VQF", "vqf.header.magic"),
    ("x.ninfer", "ninfer3.header.magic"),
    ("x.gguf", "format.magic"),
    ("x", "format.magic"),
]


@pytest.mark.parametrize(("name", "rule"), BAD_MAGIC)
def test_cli_and_api_name_the_same_rule_for_an_unknown_magic(tmp_path, capsys, name, rule):
    bad = tmp_path / name
    bad.write_bytes(b"ABCD" + bytes(600))
    assert main(["verify", str(bad)]) == 1
    captured = capsys.readouterr()
    said = {r for _, r in BAD_MAGIC if f"[{r}]" in captured.out + captured.err}
    assert said == {rule}
    assert [(v.rule, v.error_class) for v in weightfile.validate(bad)] == [(rule, "MalformedError")]
    with pytest.raises(weightfile.MalformedError) as info:
        weightfile.open(bad).close()
    assert info.value.rule == rule


def test_a_short_vqf_with_a_bad_magic_is_a_bad_magic_everywhere(tmp_path, capsys):
    """A short file whose first bytes are not the magic is not a VQF at all: the magic is
    reported, not the size (spec/vqf.md §loader-chain, step 1's [weightfile] note)."""
    bad = tmp_path / "x.vqf"
    bad.write_bytes(b"GGUX")
    assert main(["verify", str(bad)]) == 1
    assert "[vqf.header.magic]" in capsys.readouterr().out
    assert [v.rule for v in weightfile.validate(bad)] == ["vqf.header.magic"]
    assert [v.rule for v in weightfile.validate_vqf(bad)] == ["vqf.header.magic"]


def test_validate_is_the_vqf_validator_for_a_vqf_file(example):
    patch_bytes(example, 4000, b"\x07")  # the zero gap
    patch_bytes(example, 5000, b"\x99")  # inside token_embed: FNV mismatch
    found = weightfile.validate(example, checksum=True)
    assert found == weightfile.validate_vqf(example, checksum=True)
    assert {v.rule for v in found} == {"vqf.file.gap", "vqf.trailer.fnv"}
    assert weightfile.validate(EXAMPLE_PATH, checksum=True) == []


def test_truncated_vqf_names_the_rule_and_offset(example, capsys):
    example.write_bytes(example.read_bytes()[:100])
    assert main(["verify", str(example)]) == 1
    assert "[vqf.file.too_small] truncated, 412 bytes missing" in capsys.readouterr().out


def test_the_console_script_runs():
    exe = shutil.which("weightfile")
    cmd = [exe] if exe else [sys.executable, "-m", "weightfile"]
    out = subprocess.run([*cmd, "inspect", "--example"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "VQF version 2" in out.stdout


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "m.vqf", "--promt", "hi"], "unrecognized option --promt; did you mean --prompt?"),
        (["trace", "m.vqf", "--token-ids", "1", "--out", "t.npz", "--forse"],
         "unrecognized option --forse; did you mean --force?"),
        (["verify", "m.vqf", "--checksun"], "did you mean --checksum?"),
        (["run", "m.vqf", "--prompt", "hi", "--zzz"], "unrecognized option --zzz ("),
    ],
)  # fmt: skip
def test_a_misspelt_option_is_unknown_with_a_suggestion(capsys, argv, says):
    """Issue 34 item 11: not "one of the arguments --prompt --token-ids is required"."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and says in err and "required" not in err
    assert len(err.splitlines()) == 1


def test_abbreviations_and_attached_values_still_parse():
    from weightfile.cli import build_parser

    args = build_parser().parse_args(["run", "m.vqf", "--prompt", "hi", "--max-tok", "3"])
    assert args.max_tokens == 3
    args = build_parser().parse_args(["bench", "--synthetic", "x", "-p8", "-t1", "--tokens=4"])
    assert (args.n_prompt, args.threads, args.tokens) == ([8], [1], 4)


def test_version_imports_neither_numpy_nor_the_readers():
    """Issue 34 item 11: `weightfile --version` is instant; checked by what it imports, not by
    the clock."""
    script = (
        "import sys\n"
        "from weightfile.cli import main\n"
        "assert main(['--version']) == 0\n"
        "print(sorted(m for m in ('numpy', 'construct', 'tokenizers', 'weightfile.ref.vqf.read')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    version, loaded = done.stdout.splitlines()
    assert version.startswith("weightfile ") and loaded == "[]"


def test_inspect_leaves_out_the_all_zero_vision_and_moe_fields(capsys):
    """Issue 34 item 11: a plain Qwen3 file's arch is its geometry, not ~30 zeros; a group with
    any non-zero field is shown whole; --json keeps every field."""
    from weightfile.commands.inspect import shown_arch
    from weightfile.ref.vqf.read import open_vqf

    assert main(["inspect", "--example"]) == 0
    out = capsys.readouterr().out
    assert "dim=64" in out and "vision and MoE fields all 0: omitted" in out
    for name in ("vis_depth", "image_token_id", "mrope_sections", "n_experts", "top_k"):
        assert f"{name}=" not in out
    assert main(["inspect", "--example", "--json"]) == 0
    arch = json.loads(capsys.readouterr().out)["arch"]
    assert arch["vis_depth"] == 0 and arch["n_experts"] == 0
    with open_vqf(EXAMPLE_PATH) as vqf:
        a = dict(vqf.header.arch)
    shown, omitted = shown_arch({**a, "n_experts": 8, "top_k": 2})
    assert omitted == ["vision"] and shown["n_experts"] == 8 and shown["moe_ffn"] == 0
    shown, omitted = shown_arch({**a, "vis_ds_idx": [0, 1, 0, 0]})
    assert omitted == ["MoE"] and shown["vis_depth"] == 0 and "image_token_id" in shown
