"""`weightfile convert`: every weight mode and flag set through convert, then verify
--engine-defaults; the writer plan's gates, x8 copies, quantizer and embedding; the dispatch
table; streaming.

Golden values: the flags and tensor names of the spec/vqf.md §weight-modes table written out by
hand, the spec/vqf.md §repack-gates gates worked by hand for the tiny geometries, and the
transformers checkpoint's own float32 tensors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from weightfile.cli import main
from weightfile.convert.dispatch import CONVERTERS, ConvertOptions, convert, source_kind
from weightfile.convert.vqf_plan import VQFPlan, plan_flags
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.to_vqf import import_checkpoint, plan_tensors
from weightfile.ref.codecs.vqf import codec
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import UnsupportedError

torch = pytest.importorskip("torch", reason="convert tests need the 'external' extra (torch)")
transformers = pytest.importorskip("transformers", reason="needs the 'external' extra")
from safetensors.numpy import load_file  # noqa: E402

SIZES = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)


def save_tiny(folder: Path, vocab: int, seed: int = 11, **sizes: int) -> Path:
    torch.manual_seed(seed)
    cfg = transformers.Qwen3Config(
        vocab_size=vocab,
        **{**SIZES, **sizes},
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
    )
    transformers.Qwen3ForCausalLM(cfg).save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"marker": 1}')
    return folder


@pytest.fixture(scope="module")
def hf(tmp_path_factory) -> Path:
    return save_tiny(tmp_path_factory.mktemp("hf"), 256)


@pytest.fixture(scope="module")
def hf_odd_vocab(tmp_path_factory) -> Path:
    """V = 250: the Q4 gate fails (V % 4 = 2); q8_lm cannot be 8-row tiled (V % 8 = 2)."""
    return save_tiny(tmp_path_factory.mktemp("odd"), 250)


@pytest.fixture(scope="module")
def hf_narrow_kv(tmp_path_factory) -> Path:
    """8 heads of 4, one KV head: ko = 4, so the Q8 8x8 gate fails and the Q4 gate passes."""
    return save_tiny(
        tmp_path_factory.mktemp("kv"), 256, num_attention_heads=8, num_key_value_heads=1, head_dim=4
    )


def names_of(path: Path) -> list[str]:
    with open_vqf(path) as vqf:
        return [e.name for e in vqf.entries]


def flags_of(path: Path) -> int:
    with open_vqf(path) as vqf:
        return vqf.header.flags


HEAD = ["token_embed", "final_norm", "attn_norm", "ffn_norm", "q_norm", "k_norm"]
Q8 = ["q8_q", "q8_k", "q8_v", "q8_o", "q8_gate", "q8_up", "q8_down", "q8_lm"]
Q4 = [n.replace("q8_", "q4_") for n in Q8]
X8 = [n.replace("q8_", "x8_") for n in Q8[:-1]]

# (argv options, flags, directory after the head, engine-defaults exit, the settings it needs)
# The flags are spec/vqf.md §weight-modes's "usual flags" (0x01 Q8_8X8, 0x02 Q4_4X4, 0x04 X8, 0x08
# Q8BUF_Q4, 0x10 G256, 0x20 EMB_F16); the needs are worked from spec/vqf.md §loader-chain step 10 by
# hand.
MODES = {
    "q8": (["--wmode", "q8"], 0x23, Q8, 0, ""),
    "q4": (["--wmode", "q4"], 0x23, Q4, 0, ""),
    "dual": (["--wmode", "dual"], 0x23, Q8 + Q4, 0, ""),
    "q4i": (["--wmode", "q4i"], 0x2A, Q8, 0, ""),  # the loader switches itself to q4i
    "g256": (["--wmode", "g256"], 0x33, Q8, 1, "VLLM_WMODE=g256"),
    "q4-x8": (["--wmode", "q4", "--x8"], 0x27, Q4 + X8, 1, "no engine settings load it"),
    "q8-legacy": (
        ["--wmode", "q8", "--layout", "legacy"], 0x20, Q8, 1,
        "VLLM_DISABLE_Q8_REPACK=1 VLLM_DISABLE_Q4_REPACK=1",
    ),
    "q4-legacy": (
        ["--wmode", "q4", "--layout", "legacy"], 0x20, Q4, 1,
        "VLLM_DISABLE_Q8_REPACK=1 VLLM_DISABLE_Q4_REPACK=1",
    ),
    "q4i-legacy": (["--wmode", "q4i", "--layout", "legacy"], 0x28, Q8, 1,
                   "VLLM_DISABLE_Q4_REPACK=1"),
    "g256-legacy": (
        ["--wmode", "g256", "--layout", "legacy"], 0x30, Q8, 1,
        "VLLM_DISABLE_Q8_REPACK=1 VLLM_DISABLE_Q4_REPACK=1 VLLM_WMODE=g256",
    ),
    "q4-x8-legacy": (["--wmode", "q4", "--x8", "--layout", "legacy"], 0x24, Q4 + X8, 1,
                     "no engine settings load it"),
    "q8-emb-f32": (["--embedding", "f32"], 0x03, Q8, 0, ""),
    "q4-kestrel-legacy": (["--wmode", "q4", "--quantizer", "kestrel_legacy"], 0x23, Q4, 0, ""),
    "f32": (["--wmode", "f32"], 0x03, Q8, 1, "no engine settings load it"),
    "f16": (["--wmode", "f16"], 0x23, Q8, 1, "no engine settings load it"),
}  # fmt: skip


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_through_convert_then_verify_engine_defaults(hf, tmp_path, capsys, mode):
    options, flags, matrices, exit_code, needs = MODES[mode]
    out = tmp_path / "m.vqf"
    assert main(["convert", str(hf), str(out), *options]) == 0
    assert flags_of(out) == flags
    assert names_of(out) == HEAD + matrices  # spec/vqf.md §directory-order order
    capsys.readouterr()
    assert main(["verify", "--engine-defaults", str(out)]) == exit_code
    text = capsys.readouterr().out
    if exit_code == 0:
        assert "a default engine loads it" in text and f"{out}: valid" in text
    else:
        assert needs in text and "a default engine loads it" not in text


def test_convert_and_the_engine_line_say_the_same(hf, tmp_path, capsys):
    out = tmp_path / "g.vqf"
    assert main(["convert", str(hf), str(out), "--wmode", "g256"]) == 0
    said = capsys.readouterr().out
    assert "[hf/qwen3 -> vqf, wmode g256, tiled]" in said
    assert "engine: a default engine refuses it; it loads with VLLM_WMODE=g256" in said
    assert main(["inspect", str(out)]) == 0
    assert "engine: a default engine refuses it; it loads with VLLM_WMODE=g256" in (
        capsys.readouterr().out
    )


def test_a_failed_q4_gate_leaves_q4_untiled_and_q8_lm_untiled(hf_odd_vocab, tmp_path, capsys):
    """V = 250 fails the Q4 gate (V % 4), not the Q8 one (V is not part of it, spec/vqf.md
    §repack-gates); the model is converted, not refused, and the one q8 matrix that cannot tile
    stays legacy."""
    out = tmp_path / "o.vqf"
    assert main(["convert", str(hf_odd_vocab), str(out), "--wmode", "dual"]) == 0
    assert flags_of(out) == 0x21  # Q8_8X8 | EMB_F16
    sd = load_file(str(hf_odd_vocab / "model.safetensors"))
    lm = np.ascontiguousarray(sd["lm_head.weight"], dtype=np.float32)
    with open_vqf(out) as vqf:
        q8_lm, q4_lm = bytes(vqf.payload("q8_lm")), bytes(vqf.payload("q4_lm"))
    assert q8_lm == codec("q8_0").encode(lm, 250, 64)  # untiled, though Q8_8X8 is set
    assert q4_lm == codec("q4_0").encode(lm, 250, 64)
    capsys.readouterr()
    assert main(["verify", "--engine-defaults", str(out)]) == 1
    text = capsys.readouterr().out
    assert "vqf.flags.tiling" in text  # the strict validator says what the engine does not
    assert "it loads with VLLM_DISABLE_Q4_REPACK=1" in text


def test_a_failed_q8_gate_leaves_q8_untiled(hf_narrow_kv, tmp_path):
    """ko = 4: Q8 8x8 needs ko % 8 (spec/vqf.md §repack-gates), Q4 4x4 only ko % 4."""
    out = tmp_path / "k.vqf"
    assert main(["convert", str(hf_narrow_kv), str(out), "--wmode", "dual"]) == 0
    assert flags_of(out) == 0x22  # Q4_4X4 | EMB_F16
    sd = load_file(str(hf_narrow_kv / "model.safetensors"))
    k0 = np.ascontiguousarray(sd["model.layers.0.self_attn.k_proj.weight"], dtype=np.float32)
    with open_vqf(out) as vqf:
        q8_k, q4_k = bytes(vqf.payload("q8_k")), bytes(vqf.payload("q4_k"))
    half = len(q8_k) // 2  # layer 0 of 2
    assert q8_k[:half] == codec("q8_0").encode(k0, 4, 64)
    assert q4_k[: len(q4_k) // 2] == codec("q4_0_4x4").encode(k0, 4, 64)


def layer0(hf: Path, field: str) -> np.ndarray:
    sd = load_file(str(hf / "model.safetensors"))
    return np.ascontiguousarray(sd[f"model.layers.0.{field}"], dtype=np.float32)


@pytest.mark.parametrize("layout", ["tiled", "legacy"])
def test_x8_copies_are_the_engine_shuffle_of_the_stored_q4_bytes(hf, tmp_path, layout):
    """spec/vqf.md §decisions item 14: x8_* is the spec/vqf.md §q4-8x8l shuffle of what q4_* holds
    (4x4 bytes when Q4_4X4); untiled, that is our q4_0_8x8l encoding of the same matrix."""
    out = tmp_path / "x.vqf"
    assert main(["convert", str(hf), str(out), "--wmode", "q4", "--x8", "--layout", layout]) == 0
    gate = layer0(hf, "mlp.gate_proj.weight")  # [128, 64]
    with open_vqf(out) as vqf:
        q4 = bytes(vqf.payload("q4_gate"))[: 128 * 2 * 18]
        x8 = bytes(vqf.payload("x8_gate"))[: 128 * 2 * 18]
    legacy = codec("q4_0").encode(gate, 128, 64)
    if layout == "legacy":
        assert q4 == legacy and x8 == codec("q4_0_8x8l").encode(gate, 128, 64)
    else:
        assert q4 == codec("q4_0_4x4").encode(gate, 128, 64)
        # by hand from spec/vqf.md §q4-8x8l: the shuffle reads the 4x4 bytes as legacy rows of
        # nb = 2 blocks of 18 bytes, so "row m" is q4[36m : 36m + 36], its scale the first 2
        # bytes and its qs the next 16; x8 puts the 8 scales first, then row 0's qs [0, 8) ^ 0x88
        assert x8[0:2] == q4[0:2] and x8[2:4] == q4[36:38] and x8[14:16] == q4[252:254]
        assert x8[16:24] == bytes(b ^ 0x88 for b in q4[2:10])
        assert x8 != codec("q4_0_8x8l").encode(gate, 128, 64)


def test_the_quantizer_generation_is_the_encoder_mode(hf, tmp_path):
    out = tmp_path / "l.vqf"
    assert main(["convert", str(hf), str(out), "--wmode", "q8", "--quantizer",
                 "kestrel_legacy"]) == 0  # fmt: skip
    q = layer0(hf, "self_attn.q_proj.weight")  # [64, 64]
    with open_vqf(out) as vqf:
        got = bytes(vqf.payload("q8_q"))[: 64 * 2 * 34]
    legacy = codec("q8_0_8x8").encode(q, 64, 64, mode="kestrel_legacy")
    assert got == legacy and legacy != codec("q8_0_8x8").encode(q, 64, 64)


def test_an_f32_embedding_is_the_checkpoint_float32_bytes(hf, tmp_path):
    out = tmp_path / "e.vqf"
    assert main(["convert", str(hf), str(out), "--embedding", "f32"]) == 0
    sd = load_file(str(hf / "model.safetensors"))
    with open_vqf(out) as vqf:
        e = vqf.entry("token_embed")
        assert e.qtype == 0x01
        assert (
            bytes(vqf.payload("token_embed"))
            == sd["model.embed_tokens.weight"].astype("<f4").tobytes()
        )


def test_import_is_an_alias_of_convert_with_a_tiled_default(hf, tmp_path):
    a, b = tmp_path / "a.vqf", tmp_path / "b.vqf"
    assert main(["import", str(hf), str(a), "--qtype", "q4_0"]) == 0
    assert main(["convert", str(hf), str(b), "--wmode", "q4", "--engine", "ref"]) == 0
    assert a.read_bytes() == b.read_bytes() and flags_of(a) == 0x23


def test_force_replaces_and_its_absence_refuses(hf, tmp_path, capsys):
    out = tmp_path / "f.vqf"
    out.write_bytes(b"old")
    assert main(["convert", str(hf), str(out)]) == 2  # a usage error: --force fixes it
    assert "vqf.writer.destination" in capsys.readouterr().err and out.read_bytes() == b"old"
    assert main(["convert", str(hf), str(out), "--force"]) == 0 and flags_of(out) == 0x23
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_options_the_plan_does_not_know_are_refused(hf, tmp_path, capsys):
    for bad in ({"wmode": "q2mix"}, {"quantizer": "ggml"}, {"embedding": "bf16"},
                {"wmode": "q8", "x8": True}):  # fmt: skip
        with pytest.raises(UnsupportedError) as info:
            VQFPlan(**bad)
        assert info.value.rule == "vqf.import.option"
    assert main(["convert", str(hf), str(tmp_path / "x.vqf"), "--wmode", "q8", "--x8"]) == 2
    assert "--x8 is an option of --wmode q4" in capsys.readouterr().err


def test_a_pair_without_a_converter_is_refused(hf, tmp_path, capsys):
    vqf = tmp_path / "m.vqf"
    assert main(["convert", str(hf), str(vqf)]) == 0
    assert source_kind(vqf) == "vqf" and source_kind(hf) == "hf/qwen3"
    for dst in (tmp_path / "n.bin",):  # VQF -> VQF converts since issue 34 (test_vqf_to_vqf)
        assert main(["convert", str(vqf), str(dst)]) == 3
        assert "vqf.import.source" in capsys.readouterr().err and not dst.exists()
    with pytest.raises(UnsupportedError) as info:
        convert(vqf, tmp_path / "n.ninfer", ConvertOptions())
    assert info.value.rule == "vqf.import.source"
    assert ("hf/qwen3", "vqf") in CONVERTERS


class Recording(dict):
    """A state dict that records which tensors were read, in order."""

    def __init__(self, sd: dict) -> None:
        super().__init__(sd)
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> np.ndarray:
        self.reads.append(key)
        return super().__getitem__(key)


def test_tensors_are_read_one_at_a_time_as_the_writer_asks(hf):
    """Planning reads nothing; each payload reads its own tensors when consumed (streaming)."""
    sd = Recording(load_file(str(hf / "model.safetensors")))
    c = config_from_hf(json.loads((hf / "config.json").read_text()))
    p = VQFPlan(wmode="q8")
    tensors = plan_tensors(sd, c, p, plan_flags(c, p))
    assert sd.reads == []
    first = b"".join(tensors[0].data)  # token_embed
    assert sd.reads == ["model.embed_tokens.weight"] and len(first) == 256 * 64 * 2
    q = next(t for t in tensors if t.name == "q8_q")
    chunk = next(iter(q.data))  # one layer
    assert sd.reads[-1] == "model.layers.0.self_attn.q_proj.weight" and len(sd.reads) == 2
    assert len(chunk) == 64 * 2 * 34


def test_the_api_writes_what_the_command_writes(hf, tmp_path):
    a = import_checkpoint(hf, tmp_path / "a.vqf", plan=VQFPlan(wmode="q4i"))
    b = tmp_path / "b.vqf"
    assert main(["convert", str(hf), str(b), "--wmode", "q4i", "--engine", "ref"]) == 0
    assert a.read_bytes() == b.read_bytes()


def test_a_width_that_is_not_whole_blocks_is_refused(hf, tmp_path, capsys):
    """spec/vqf.md §size-function: the importer refuses a matrix width that is not a multiple of
    32."""
    odd = tmp_path / "w"
    odd.mkdir()
    cfg = json.loads((hf / "config.json").read_text())
    (odd / "config.json").write_text(json.dumps({**cfg, "hidden_size": 48}))
    assert main(["convert", str(odd), str(tmp_path / "w.vqf")]) == 3
    assert "vqf.import.geometry" in capsys.readouterr().err and not (tmp_path / "w.vqf").exists()
