"""`.ninfer` import of a Qwen3.5-MoE checkpoint (routed experts stored fused, shared expert and
its gate) in every matrix format -> bind_ninfer -> the reference forward pass, against
transformers float32 eager (spec/ninfer3.md §qwen35-config, §qwen35-names; spec/models.md §qwen35).

Budgets as the dense import's (tests/convert/test_qwen35_ninfer_logits.py): bf16 on bf16-valued
weights, and every quantised format on the de-quantised weights read back from the file, within
1e-5 with the same argmax; the experts chosen at every token of every layer are transformers'
(its router hooked; ours are the top k of the traced router logits, ties to the smaller index).
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_checkpoint import FORMATS
from strategies.qwen35_moe_checkpoint import (
    TOP_K,
    chosen_experts,
    load_canonical_moe,
    write_checkpoint,
)

from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.fast.backend import FAST
from weightfile.model_file import NInferModelFile
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.spec.ninfer3.text_names import text_parameters

TOKENS = [3, 141, 59, 26, 5, 200, 97, 9, 223]
BOUND = 1e-5


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf35moe")
    return folder, write_checkpoint(folder, seed=7)


def file_parameters(path) -> dict[str, np.ndarray]:
    with NInferModelFile(path) as f:
        config = f.artifact.component("text").config
        return {
            p.name: f.decode(p.name, engine="fast").reshape(p.shape)
            for p in text_parameters(config)
        }


def reference(path) -> tuple[np.ndarray, list[np.ndarray]]:
    """Logits and, per layer, the top k of the traced router logits (ties: smaller index)."""
    with open_artifact(path) as nf:
        config, weights = bind_ninfer(nf)
    assert config.is_moe
    model = Qwen35Model(config, weights)
    trace = TraceRecorder()
    logits = model.forward(TOKENS, model.new_cache(), trace=trace)
    arrays = trace.arrays()
    chosen = []
    for i in range(config.num_hidden_layers):
        router = arrays[f"layers.{i}.router_logits"]
        chosen.append(np.sort(np.argsort(-router, axis=1, kind="stable")[:, :TOP_K], axis=1))
    return np.asarray(logits), chosen


@pytest.mark.parametrize("fmt", FORMATS)
def test_moe_import_gives_transformers_logits_and_experts(checkpoint, tmp_path, fmt):
    folder, model = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.ninfer", fmt=fmt, backend=FAST)[0]
    if fmt == "bf16":
        oracle = model  # bf16-valued weights: the file holds them exactly
    else:
        oracle = type(model)(model.config).eval()
        load_canonical_moe(oracle, file_parameters(out))
    want, want_experts = chosen_experts(oracle, TOKENS)
    got, got_experts = reference(out)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
    assert diff <= BOUND, f"max |logit diff| {diff:.3g}"
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert np.abs(want).max() > 0.1
    for layer, (g, w) in enumerate(zip(got_experts, want_experts, strict=True)):
        assert (g == w).all(), f"layer {layer}"
    assert len({tuple(r) for e in want_experts for r in e}) > 2  # the tokens spread
    if fmt != "bf16":  # quantisation really changed the weights
        assert np.abs(chosen_experts(model, TOKENS)[0] - want).max() > BOUND
