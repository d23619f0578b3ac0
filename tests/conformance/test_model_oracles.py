"""The committed Qwen3.5 model cases' expected logits and greedy tokens against transformers
(conformance/README.md, "Where the expected values come from").

Each `ninfer3/*/model/qwen35/*` case's file is decoded parameter by parameter (the codecs are
cross-checked against ml_dtypes and NumPy at generation), loaded into transformers'
`Qwen3_5ForCausalLM` / `Qwen3_5MoeForCausalLM` built from the file's own text config, and run in
float32 on the prompt plus the case's generated tokens. The case's logits must be within
`BOUND` of transformers' and the greedy tokens equal. This runs over the committed corpus in
CI, so regenerating the corpus needs no torch.

Why 1e-5 of the largest |logit| (and 1e-5 absolute below 1): the canonical `.ninfer` forward
multiplies the decoded float32 weights (spec/numerics.md §f32-weights) in another summation order
than PyTorch's, and the recurrent DeltaNet form differs from transformers' chunked one
(spec/numerics.md §delta-rule); two float32 computations of these tiny models then differ by
tens of ulps of the largest logit (measured: 1.07e-5 at |logit| 3.25 for dense-bf16, 3.3e-6
relative; 2.0e-6 and 1.2e-6 for the others).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from strategies.qwen35_checkpoint import load_canonical, torch, transformers
from strategies.qwen35_moe_checkpoint import load_canonical_moe

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.model_file import NInferModelFile
from weightfile.spec.ninfer3.text_names import text_parameters

BOUND = 1e-5
CASES = sorted(p.parent for p in CORPUS_DIR.glob("ninfer3/*/model/qwen35/*/want.json"))


def transformers_model(config: dict) -> torch.nn.Module:
    """transformers' model for a `.ninfer` text config (the file's own numbers)."""
    moe = "num_experts" in config
    keys = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    rope = dict(config["rope_parameters"], rope_type="default")
    cls = transformers.Qwen3_5MoeTextConfig if moe else transformers.Qwen3_5TextConfig
    hf = cls(**(keys | {"rope_parameters": rope}), attn_implementation="eager")
    model = (transformers.Qwen3_5MoeForCausalLM if moe else transformers.Qwen3_5ForCausalLM)(hf)
    return model.eval()


def sylvester(n: int) -> np.ndarray:
    """The normalised Sylvester Hadamard matrix of order n, in float64 (np.kron)."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.kron(h, np.array([[1.0, 1.0], [1.0, -1.0]]))
    return h / np.sqrt(n)


def unrotated(w: np.ndarray, signs: np.ndarray, block: int = 1024) -> np.ndarray:
    """The matrix a Hadamard-input Use multiplies x by: W · H(s ∘ x) = (W · H · diag(s)) · x per
    1024-column block (spec/ninfer3.md §use), in float64 — what transformers must be given."""
    h = sylvester(block)
    out = w.astype(np.float64)
    for b in range(0, w.shape[1], block):
        out[:, b : b + block] = (out[:, b : b + block] @ h) * signs[b : b + block]
    return out.astype(np.float32)


def decoded(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The file's text parameters as the forward pass uses them (rotated inputs folded back)."""
    with NInferModelFile(path) as f:
        config = f.artifact.component("text").config
        params = {}
        for p in text_parameters(config):
            w = f.decode(p.name, engine="fast").reshape(p.shape)
            signs = list(f.hadamard_signs(p.name).values())
            assert len(signs) <= 1, p.name  # one Use with signs at most in these cases
            params[p.name] = unrotated(w, signs[0]) if signs else w
        return config, params


def array(doc: dict) -> np.ndarray:
    shape = tuple(int(n) for n in doc["shape"])
    return np.frombuffer(bytes.fromhex(doc["hex"]), dtype="<f4").reshape(shape)


def case_name(folder: Path) -> str:
    return f"{folder.parents[2].name}/{folder.name}"


@pytest.mark.parametrize("folder", CASES, ids=case_name)
def test_the_case_logits_are_transformers_logits(folder: Path) -> None:
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    config, params = decoded(folder / case["model"])
    model = transformers_model(config)
    (load_canonical_moe if "num_experts" in config else load_canonical)(model, params)
    prompt = [int(t) for t in case["prompt"]]
    tokens = [int(t) for t in want["tokens"]]
    with torch.no_grad():
        theirs = model(torch.tensor([prompt + tokens[:-1]])).logits[0].float().numpy()
    ours = array(want["logits"])
    assert ours.shape == theirs.shape
    diff = float(np.abs(ours.astype(np.float64) - theirs).max())
    scale = max(1.0, float(np.abs(theirs).max()))
    assert diff <= BOUND * scale, f"max |logit diff| {diff:.3g} at largest |logit| {scale:.3g}"
    # greedy: each generated token is transformers' argmax after the tokens before it
    assert theirs[len(prompt) - 1 :].argmax(axis=1).tolist() == tokens
    assert np.abs(theirs).max() > 0.1  # not trivially small logits


def test_every_qwen35_model_case_is_checked() -> None:
    names = ["dense-bf16", "dense-q4-q8-fused", "moe-q8-fused"]
    want = [f"{v}/{n}" for v in ("v1", "v2") for n in names] + ["v2/wide-hadamard"]
    assert sorted(case_name(p) for p in CASES) == sorted(want)
