"""The issue's external check end to end: import -> bind_ninfer -> logits vs transformers fp32.

A bf16 import of a checkpoint whose weights are bf16 values (A_log / dt_bias full fp32) must give
transformers' float32 logits within 1e-5 with the same argmax at every position. A quantised
import is compared with transformers running the de-quantised weights read back from the file,
so only the forward passes differ, never the weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_checkpoint import load_canonical, torch, write_checkpoint

from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.fast.backend import FAST
from weightfile.model_file import NInferModelFile
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.spec.ninfer3.text_names import text_parameters

TOKENS = [3, 141, 59, 26, 5, 200, 97, 9, 223]
BOUND = 1e-5  # the external-check bound


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf35")
    return folder, write_checkpoint(folder, tied=False, seed=5)


def file_parameters(path) -> dict[str, np.ndarray]:
    """Every spec/ninfer3.md §qwen35-names parameter decoded through its binding (model_file, fast
    codecs)."""
    with NInferModelFile(path) as f:
        config = f.artifact.component("text").config
        return {
            p.name: f.decode(p.name, engine="fast").reshape(p.shape)
            for p in text_parameters(config)
        }


def reference_logits(path) -> np.ndarray:
    """The file bound by the architecture binder, run by the reference forward pass."""
    with open_artifact(path) as nf:
        config, weights = bind_ninfer(nf)
    model = Qwen35Model(config, weights)
    return model.forward(TOKENS, model.new_cache())


def transformers_logits(model: torch.nn.Module) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([TOKENS])).logits[0].float().numpy()


def check(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
    assert diff <= BOUND, f"max |logit diff| {diff:.3g}"
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert np.abs(want).max() > 0.1  # not trivially small logits


def test_bf16_import_gives_transformers_logits(checkpoint, tmp_path):
    folder, model = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.ninfer", fmt="bf16", backend=FAST)[0]
    check(reference_logits(out), transformers_logits(model))


@pytest.mark.parametrize("fmt", ["q4_g64_fp16", "q8_g32_fp16"])
def test_quantized_import_gives_transformers_logits_on_its_weights(checkpoint, tmp_path, fmt):
    folder, model = checkpoint
    out = import_checkpoint(folder, tmp_path / "m.ninfer", fmt=fmt, backend=FAST)[0]
    dequantized = type(model)(model.config).eval()
    load_canonical(dequantized, file_parameters(out))
    want = transformers_logits(dequantized)
    check(reference_logits(out), want)
    # quantisation really changed the weights: the original model's logits differ
    assert np.abs(transformers_logits(model) - want).max() > BOUND
