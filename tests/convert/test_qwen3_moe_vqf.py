"""`weightfile import` of a Qwen3-MoE checkpoint: a tiny seeded transformers Qwen3MoeForCausalLM
(8 experts, top 2, norm_topk_prob true, every layer MoE) -> a version-3 VQF -> the reference
decoder, against transformers float32 eager (spec/models.md §qwen3-moe, §qwen3-moe-vqf-v3).

Budgets: f32 file and f32_weights products on a quantized file's de-quantized weights: float
rounding only, ≤ 1e-5 (measured 2.6e-7); the default q8_activation mode on a q8_0 file against
transformers on the original weights: ≤ 5 % of the largest logit (measured 2.8 %), argmax equal.
The experts chosen at every token of every layer are transformers' (its router hooked).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from strategies.qwen3_moe_checkpoint import TOKENS, build_model, load_weights, run, save

from weightfile.cli import main
from weightfile.families.qwen3.to_vqf import tokenizer_sidecar
from weightfile.families.qwen3_moe.to_vqf import import_qwen3_moe
from weightfile.fast.backend import FAST  # the same bytes as the reference codecs, faster
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf
from weightfile.ref.qwen3_moe.decoder import Qwen3MoeModel
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

pytest.importorskip("torch", reason="the MoE oracle needs the 'external' extra (torch)")
pytest.importorskip("transformers", reason="the MoE oracle needs transformers")

F32_WEIGHTS = CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    model = build_model()
    folder = save(model, tmp_path_factory.mktemp("hf_moe"))
    return folder, model, run(model, TOKENS)


def bound(path):
    with open_vqf(path) as vqf:
        return bind_vqf(vqf)


def forward(config, weights, profile=CANONICAL):
    model = Qwen3MoeModel(config, weights, profile)
    trace = TraceRecorder()
    logits = model.forward(TOKENS, model.new_cache(), trace=trace)
    return logits, trace.arrays()


def test_f32_import_matches_transformers_and_chooses_its_experts(checkpoint, tmp_path):
    folder, _, (want, experts, weights) = checkpoint
    config, w = bound(import_qwen3_moe(folder, tmp_path / "m.vqf", qtype="f32"))
    assert (config.num_experts, config.num_experts_per_tok, config.moe_intermediate_size) == (
        8, 2, 32,
    )  # fmt: skip
    got, trace = forward(config, w)
    assert np.abs(got - want).max() <= 1e-5
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    for layer in range(config.num_hidden_layers):
        chosen = trace[f"layers.{layer}.moe_experts"]
        assert (chosen == experts[layer]).all(), f"layer {layer}"
        assert np.abs(trace[f"layers.{layer}.moe_weights"] - weights[layer]).max() <= 1e-6
    assert len({tuple(r) for e in experts for r in e}) > 4  # the tokens spread over the experts
    assert tokenizer_sidecar(tmp_path / "m.vqf").read_text() == '{"marker": 1}'


@pytest.mark.parametrize(("qtype", "layout"), [("q8_0", "tiled"), ("q4_0", "legacy")])
def test_quantized_imports_match_transformers_on_their_dequantized_weights(
    checkpoint, tmp_path, qtype, layout
):
    folder, model, (original, _, _) = checkpoint
    config, weights = bound(
        import_qwen3_moe(folder, tmp_path / "m.vqf", qtype=qtype, layout=layout, backend=FAST)
    )
    assert isinstance(weights.layers[0].experts[3].down, QuantMatrix)
    load_weights(model, config, weights)  # the fixture's model is not used after this module
    want, experts, _ = run(model, TOKENS)
    got, trace = forward(config, weights, F32_WEIGHTS)
    assert np.abs(got - want).max() <= 1e-5  # the same weights: float rounding only
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    for layer in range(config.num_hidden_layers):
        assert (trace[f"layers.{layer}.moe_experts"] == experts[layer]).all()
    # engine style adds the activation rounding of spec/numerics.md §q8-activation to every product
    act, _ = forward(config, weights)
    assert 1e-5 < np.abs(act - want).max() <= 0.05 * np.abs(want).max()
    if qtype == "q8_0":  # and against the original weights: q8_0 weight rounding on top
        assert np.abs(act - original).max() <= 0.05 * np.abs(original).max()
        assert (act.argmax(axis=1) == original.argmax(axis=1)).all()


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"norm_topk_prob": False}, "norm_topk_prob"),
        ({"mlp_only_layers": [1]}, "mlp_only_layers"),
        ({"decoder_sparse_step": 2}, "decoder_sparse_step"),
        ({"shared_expert_intermediate_size": 64}, "shared_expert_intermediate_size"),
    ],
)
def test_a_config_a_version3_file_cannot_state_is_refused(checkpoint, tmp_path, change, key):
    folder, _, _ = checkpoint
    bad = tmp_path / "hf"
    bad.mkdir()
    cfg = json.loads((folder / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**cfg, **change}))
    with pytest.raises(UnsupportedError) as exc:
        import_qwen3_moe(bad, tmp_path / "m.vqf")  # refused before any tensor is read
    assert (exc.value.rule, exc.value.path) == ("vqf.import.moe_config", f"config.json.{key}")
    assert not (tmp_path / "m.vqf").exists()


def test_the_guard_config_is_accepted(checkpoint, tmp_path):
    """Guard for the refusals above: the same keys at the values a version-3 file means."""
    folder, _, _ = checkpoint
    cfg = json.loads((folder / "config.json").read_text())
    assert (cfg["norm_topk_prob"], cfg["mlp_only_layers"], cfg["decoder_sparse_step"]) == (
        True, [], 1,
    )  # fmt: skip


def test_tiled_import_needs_tile_groups_inside_one_expert(checkpoint, tmp_path, monkeypatch):
    folder, _, _ = checkpoint
    bad = tmp_path / "hf"
    bad.mkdir()
    cfg = json.loads((folder / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**cfg, "moe_intermediate_size": 36}))
    with pytest.raises(UnsupportedError) as exc:
        import_qwen3_moe(bad, tmp_path / "m.vqf", qtype="q4_0", layout="tiled")
    assert exc.value.rule == "vqf.import.geometry"


def test_cli_import_verify_run_and_trace(checkpoint, tmp_path, capsys):
    folder, _, _ = checkpoint
    out = tmp_path / "m.vqf"
    assert main(["import", str(folder), str(out), "--qtype", "q4_0", "--layout", "tiled"]) == 0
    with open_vqf(out) as vqf:
        assert vqf.header.version == 3 and vqf.header.is_moe
        assert vqf.header.arch["n_experts"] == 8 and vqf.header.arch["top_k"] == 2
    assert main(["verify", "--checksum", str(out)]) == 0
    tokenizer_sidecar(out).unlink()  # the marker is no tokenizer: run on token ids
    npz = tmp_path / "t.npz"
    assert main(["trace", str(out), "--token-ids", "1,2,3", "--out", str(npz)]) == 0
    with np.load(npz) as z:
        assert z["layers.1.moe_experts"].shape == (3, 2)
        assert z["layers.0.router_logits"].shape == (3, 8)
    capsys.readouterr()
    outputs = []
    for engine in ("ref", "fast"):
        argv = ["run", str(out), "--token-ids", "1,2,3", "--max-tokens", "3", "--engine", engine]
        assert main(argv) == 0
        outputs.append(capsys.readouterr())
    assert outputs[0].out.strip() and outputs[0].out == outputs[1].out  # the same tokens
    assert "note" not in outputs[1].err  # the fast engine ran, not the reference


def test_convert_takes_the_moe_row_and_refuses_other_weight_modes(checkpoint, tmp_path, capsys):
    """`convert` picks the Qwen3-MoE importer by model_type (the CONVERTERS row) and refuses a
    weight mode the family importer cannot write instead of ignoring it."""
    folder, _, _ = checkpoint
    out = tmp_path / "c.vqf"
    assert main(["convert", str(folder), str(out), "--wmode", "q8", "--layout", "legacy"]) == 0
    with open_vqf(out) as vqf:
        assert vqf.header.is_moe and {e.name for e in vqf.entries} >= {"moe_router", "q8_gate"}
    capsys.readouterr()
    for refused in (["--wmode", "q4i"], ["--wmode", "dual"], ["--wmode", "q4", "--x8"]):
        assert main(["convert", str(folder), str(tmp_path / "r.vqf"), *refused]) == 3
        assert "vqf.import.option" in capsys.readouterr().err
    assert not (tmp_path / "r.vqf").exists()
