"""`weightfile diff` (spec/numerics.md §dump-diff; issue 34 item 1): every array and every token
of two traces, arrays in one file only, exit codes 0/1/2/4, tolerances, --json, and the files
`dump` writes (.npy, safetensors)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.examples import EXAMPLE_PATH

ENGINE = Path(__file__).resolve().parents[1] / "data" / "kestrel-board" / "a-q4_0-tiled-p5"
ENGINE = ENGINE / "engine.npz"


def run(*argv: str | Path) -> int:
    try:
        return main(["diff", *map(str, argv)])
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code)


def flip(a: np.ndarray, index: tuple, bit: int = 0) -> np.ndarray:
    out = a.copy()
    out.view(np.uint32)[index] ^= np.uint32(1 << bit)
    return out


def hand_trace(tokens: int = 3) -> dict[str, np.ndarray]:
    """A small trace in `weightfile trace`'s names: a vision tower, two layers, logits."""
    rng = np.random.default_rng(7)
    arrays = {"input_ids": np.arange(tokens, dtype=np.int64)}
    arrays["vision.patch_embed"] = rng.standard_normal((4, 8), dtype=np.float32)
    arrays["vision.merger"] = rng.standard_normal((1, 8), dtype=np.float32)
    arrays["embed"] = rng.standard_normal((tokens, 8), dtype=np.float32)
    for layer in range(2):
        for op in ("attn_norm", "q_proj", "o_proj", "attn_residual", "ffn_residual"):
            arrays[f"layers.{layer}.{op}"] = rng.standard_normal((tokens, 8), dtype=np.float32)
    arrays["final_norm"] = rng.standard_normal((tokens, 8), dtype=np.float32)
    arrays["logits"] = rng.standard_normal((tokens, 16), dtype=np.float32)
    return arrays


def test_two_traces_differing_in_vision_and_at_token_0_are_different(tmp_path, capsys) -> None:
    """The reproducer in the trace format: a vision array and token 0 of layers.0.q_proj
    changed; both are named, with the element, and the result is 1 (main said identical, 0)."""
    t = hand_trace()
    np.savez(tmp_path / "a.npz", **t)
    t["vision.patch_embed"] = flip(t["vision.patch_embed"], (2, 5))
    t["layers.0.q_proj"] = flip(t["layers.0.q_proj"], (0, 1), 3)
    np.savez(tmp_path / "b.npz", **t)
    assert run(tmp_path / "a.npz", tmp_path / "b.npz") == 1
    out = capsys.readouterr().out
    assert "vision.patch_embed: 1 of 32 differ" in out and "first [2,5]" in out
    assert "layers.0.q_proj: 1 of 24 differ" in out and "max 8 ulps; first [0,1]" in out
    assert "first divergence: vision.patch_embed, row 2" in out
    assert "14 of 16 common arrays bit-identical" in out and "result: different" in out
    assert run(tmp_path / "a.npz", tmp_path / "a.npz") == 0


def test_two_real_qwen3_vl_traces(tmp_path, capsys) -> None:
    """The same from `weightfile trace` of a tiny Qwen3-VL with an image (tests/strategies):
    vision.blocks.1.fc1 and layers.0.q_proj at token 0 changed -> both reported, exit 1."""
    vl = pytest.importorskip("strategies.qwen3_vl")
    from PIL import Image

    Image.fromarray(vl.image_array()).save(tmp_path / "img.png")
    ids = f"1,2,{vl.VS_ID},{vl.IMAGE_ID},{vl.VE_ID},3,4"
    pixels = ["--min-pixels", str(vl.MIN_PIXELS), "--max-pixels", str(vl.MAX_PIXELS)]
    argv = ["trace", str(vl.shared_vqf()), "--token-ids", ids, "--image", str(tmp_path / "img.png")]
    assert main([*argv, *pixels, "--engine", "fast", "--out", str(tmp_path / "a.npz")]) == 0
    t = dict(np.load(tmp_path / "a.npz"))
    t["vision.blocks.1.fc1"] = flip(t["vision.blocks.1.fc1"], (0, 3))
    t["layers.0.q_proj"] = flip(t["layers.0.q_proj"], (0, 5), 20)
    np.savez(tmp_path / "b.npz", **t)
    capsys.readouterr()
    assert run(tmp_path / "a.npz", tmp_path / "b.npz") == 1
    out = capsys.readouterr().out
    assert "vision.blocks.1.fc1: 1 of " in out and "layers.0.q_proj: 1 of " in out
    assert f"{len(t) - 2} of {len(t)} common arrays bit-identical" in out


def test_a_trace_against_a_board_dump_says_what_it_could_not_map(tmp_path, capsys) -> None:
    """Mapped: layer ops at the last token, final_norm, logits; named as not mapped: the
    embedding, o_proj, the vision tower; the earlier tokens are named as not compared."""
    t = hand_trace(tokens=5)
    np.savez(tmp_path / "t.npz", **t)
    assert run(tmp_path / "t.npz", ENGINE) == 1
    out = capsys.readouterr().out
    assert "naming: A, a trace, read in the board's names" in out
    assert "tokens 0..3 of the trace's per-op arrays are not compared" in out
    unmapped = next(line for line in out.splitlines() if "not mapped" in line)
    for name in ("embed", "layers.0.o_proj", "vision.patch_embed", "vision.merger"):
        assert name in unmapped
    assert "prefill.last.layer0.q_proj [layers.0.q_proj[-1]]: shape (8,) vs (256,)" in out


def test_arrays_in_one_file_only_make_it_different_unless_common_only(tmp_path, capsys):
    a = {"x": np.float32([1, 2]), "y": np.float32([3])}
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", x=a["x"], z=np.int32([1]))
    assert run(tmp_path / "a.npz", tmp_path / "b.npz") == 1
    out = capsys.readouterr().out
    assert "1 arrays in A only (not in B): y" in out and "1 arrays in B only (not in A): z" in out
    assert run(tmp_path / "a.npz", tmp_path / "b.npz", "--common-only") == 0
    assert "1 of 1 common arrays bit-identical" in capsys.readouterr().out
    np.savez(tmp_path / "c.npz", w=np.float32([0]))
    assert run(tmp_path / "a.npz", tmp_path / "c.npz", "--common-only") == 1  # nothing compared


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--atol", "-1"], 2),
        (["--rtol", "nan"], 2),
        (["--max-ulps", "1.5"], 2),
        (["--no-such-option"], 2),
        ([], 1),
        (["--max-ulps", "3"], 0),
        (["--max-ulps", "2"], 1),
        (["--atol", "1e-6"], 0),
        (["--rtol", "1e-7"], 1),
    ],
)
def test_exit_codes_and_tolerances(extra: list[str], code: int, tmp_path, capsys) -> None:
    """2.0 against 2.0 + 3 ulps (|delta| 7.15e-7): 1 exact, 0 within --max-ulps 3 or --atol
    1e-6, 1 beyond --max-ulps 2 or --rtol 1e-7; a bad tolerance is a usage error (2)."""
    np.savez(tmp_path / "a.npz", v=np.array([0x40000000], np.uint32).view(np.float32))
    np.savez(tmp_path / "b.npz", v=np.array([0x40000003], np.uint32).view(np.float32))
    assert run(tmp_path / "a.npz", tmp_path / "b.npz", *extra) == code
    if code == 0:
        assert "all within tolerance" in capsys.readouterr().out


def test_a_sign_change_does_not_drown_the_ulps(tmp_path, capsys) -> None:
    """[1.0 vs next, -1.0 vs 1.0]: "max 1 ulps" and the sign change apart (main: 2130706432)."""
    a = np.array([0x3F800000, 0xBF800000], np.uint32).view(np.float32)
    b = np.array([0x3F800001, 0x3F800000], np.uint32).view(np.float32)
    np.savez(tmp_path / "a.npz", v=a)
    np.savez(tmp_path / "b.npz", v=b)
    assert run(tmp_path / "a.npz", tmp_path / "b.npz") == 1
    out = capsys.readouterr().out
    assert "max 1 ulps, 1 sign changes (up to 2130706432 ulps apart)" in out


def test_json_has_a_schema_tag_and_every_number(tmp_path, capsys) -> None:
    np.savez(tmp_path / "a.npz", v=np.float32([1.0, np.inf]), w=np.int64([5]))
    np.savez(tmp_path / "b.npz", v=np.float32([1.0, 2.0]), w=np.int64([5]))
    assert run(tmp_path / "a.npz", tmp_path / "b.npz", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "weightfile.diff/1" and doc["result"] == "different"
    v = next(a for a in doc["arrays"] if a["name"] == "v")
    assert v["status"] == "different" and v["max_abs"] == "inf" and v["differ"] == 1
    assert v["first"] == {"index": [1], "a": "inf", "b": 2.0, "a_bits": "0x7f800000",
                          "b_bits": "0x40000000"}  # fmt: skip
    assert doc["a"]["format"] == "npz" and doc["only_in_a"] == []


def test_reads_what_dump_writes(tmp_path, capsys) -> None:
    """dump NAME --out .npy and dump --all (safetensors): the same tensor, so the .npy against
    the safetensors file is equal on the arrays they share; a changed .npy differs."""
    ex = str(EXAMPLE_PATH)
    assert main(["dump", ex, "q4_down", "--out", str(tmp_path / "q4_down.npy")]) == 0
    assert main(["dump", ex, "--all", "--out", str(tmp_path / "all.safetensors")]) == 0
    capsys.readouterr()
    npy, st = tmp_path / "q4_down.npy", tmp_path / "all.safetensors"
    assert run(npy, st, "--common-only") == 0
    assert run(st, st) == 0
    changed = tmp_path / "changed.npy"
    values = np.load(npy)
    np.save(changed, flip(values, (0,) * values.ndim))
    capsys.readouterr()
    assert run(npy, changed) == 1  # two single .npy files: their one array each
    assert "q4_down | changed: 1 of" in capsys.readouterr().out


def test_bfloat16_safetensors_compare_in_bfloat16_ulps(tmp_path, capsys) -> None:
    from safetensors.numpy import save_file

    bf16 = pytest.importorskip("ml_dtypes").bfloat16
    a = np.array([0x3F80, 0x4000], np.uint16).view(bf16)
    b = np.array([0x3F81, 0x4000], np.uint16).view(bf16)
    save_file({"w": a}, str(tmp_path / "a.safetensors"))
    save_file({"w": b}, str(tmp_path / "b.safetensors"))
    assert run(tmp_path / "a.safetensors", tmp_path / "b.safetensors") == 1
    assert "max 1 ulps; first [0]: 1 (0x3f80) vs 1.0078125 (0x3f81)" in capsys.readouterr().out
